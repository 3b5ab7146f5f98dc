/** The shell commands' usage lines, apart from their code so that `gatehouse help` loads none of it. */

export const MEMBERS_USAGE = `  members   manage members from the shell (on the database, like migrate):
            gatehouse members add --email E [--role admin|write|read] [--org KEY]
            gatehouse members reset-password --email E
            gatehouse members reset-2fa --email E           removes the second factor and recovery codes
            the password comes from GATEHOUSE_MEMBER_PASSWORD or the first line of stdin, never from flags`;

export const ORGS_USAGE = `  orgs      organizations on the database, like migrate (moves between regions: docs/regions.md):
            gatehouse orgs freeze --org KEY                   refuses its writes (423) while it moves; unfreeze undoes
            gatehouse orgs export --org KEY --to REGION --file PATH [--freeze]
                                                              every row of the organization, as JSON lines
            gatehouse orgs import --file PATH                 into this region; prints the reissued API keys
            gatehouse orgs delete --org KEY --confirm KEY [--force]
                                                              removes it once imported elsewhere (refused if it
                                                              changed since its export, unless --force)
            gatehouse orgs set-rate-limit --org KEY --limit N|default
                                                              requests per minute per API key (60 or more)`;

/** `gatehouse policy` (src/cli/policy.ts). */
export const POLICY_USAGE = `  policy export --env PROJECT/ENV [--out FILE] [--with-facts]
            write the environment's policy as YAML (standard output, or FILE); with its facts too
  policy plan FILE --env PROJECT/ENV
            print what applying FILE would change; exit 0 no change, 2 changes, 1 error
  policy apply FILE --env PROJECT/ENV [--revision N [--replan]]
            apply FILE in one revision (N: the plan's revision; 409 when the environment changed since,
            unless --replan: then plan again and apply)
  policy test TESTS (--policy FILE | --env PROJECT/ENV) [--format text|junit|tap]
            check the cases of TESTS on the PDP engine in process; exit 0 all pass, 1 otherwise
  policy replay (FILE [--revision N] | --draft-env ENV) --env PROJECT/ENV [--since 24h | --from T] [--to T]
                [--checks FILE] [--limit N] [--format text|json]
            which logged decisions (or the checks of FILE) the draft flips; exit 0 none, 2 some, 1 error
            (policy commands reach the server with --url and --api-key, or GATEHOUSE_URL and GATEHOUSE_API_KEY)`;
