/** The shell commands' usage lines, apart from their code so that `gatehouse help` loads none of it. */

export const MEMBERS_USAGE = `  members   manage members from the shell (on the database, like migrate):
            gatehouse members add --email E [--role admin|write|read] [--org KEY]
            gatehouse members reset-password --email E
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
