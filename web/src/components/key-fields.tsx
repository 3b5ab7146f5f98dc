import { createContext, useContext, useState } from "react";
import { TextInput } from "@mantine/core";

// The API's rules for keys and names (KEY_PATTERN, Key and Name in src/lib/schemas.ts), checked as they are typed.
const KEY = /^[A-Za-z0-9\-_]+$/;
const MAX = 255;
export const KEY_RULE = "letters, digits, - and _";

/** What is wrong with a key as typed, or undefined (an empty key is the form's `required`). */
export function keyProblem(key: string): string | undefined {
  if (key.length > MAX) return `at most ${MAX} characters`;
  if (key !== "" && !KEY.test(key)) return `only ${KEY_RULE}`;
  return undefined;
}

const nameProblem = (name: string) => (name.length > MAX ? `at most ${MAX} characters` : undefined);

/** A key proposed from a name: "Acme Corp." becomes "acme-corp". */
export function proposeKey(name: string): string {
  return name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, MAX);
}

/**
 * A refused form's messages by field (a 422's `detail`), which the fields below show at their place until the
 * form is edited again (then the rules checked as typed speak).
 */
export const FieldErrors = createContext<Record<string, string>>({});

/** A key field on its own (instances, a copy's new environment), checked as typed. */
export function KeyInput({
  label = "Key",
  name = "key",
  autoFocus = true,
}: {
  label?: string;
  name?: string;
  autoFocus?: boolean;
}) {
  const [key, setKey] = useState("");
  const refused = useContext(FieldErrors)[name];
  return (
    <TextInput
      label={label}
      name={name}
      required
      data-autofocus={autoFocus || undefined}
      description={KEY_RULE}
      value={key}
      onChange={(e) => setKey(e.currentTarget.value)}
      error={refused ?? keyProblem(key)}
    />
  );
}

/** A new object's name and key: the key is proposed from the name until it is typed itself. */
export function NameKeyFields({ nameRequired = true }: { nameRequired?: boolean }) {
  const [name, setName] = useState("");
  const [typedKey, setTypedKey] = useState<string | undefined>(undefined);
  const refused = useContext(FieldErrors);
  const key = typedKey ?? proposeKey(name);
  return (
    <>
      <TextInput
        label="Name"
        name="name"
        required={nameRequired}
        data-autofocus
        description={`at most ${MAX} characters`}
        value={name}
        onChange={(e) => setName(e.currentTarget.value)}
        error={refused["name"] ?? nameProblem(name)}
      />
      <TextInput
        label="Key"
        name="key"
        required
        description={`${KEY_RULE}; proposed from the name`}
        value={key}
        onChange={(e) => setTypedKey(e.currentTarget.value)}
        error={refused["key"] ?? keyProblem(key)}
      />
    </>
  );
}
