import { JsonInput, TextInput } from "@mantine/core";

/** Parses an attributes editor's text: a JSON object, or an error saying why not. */
export function parseAttributes(text: string): Record<string, unknown> {
  if (text.trim() === "") return {};
  const value: unknown = JSON.parse(text);
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Error("attributes must be a JSON object");
  }
  return value as Record<string, unknown>;
}

/** The attributes of a user or a tenant: JSON, checked as it is typed and refused unless an object. */
export function AttributesInput({ value }: { value?: Record<string, unknown> | null }) {
  return (
    <JsonInput
      label="Attributes"
      name="attributes"
      description="a JSON object"
      validationError="Not valid JSON"
      defaultValue={value && Object.keys(value).length > 0 ? JSON.stringify(value, null, 2) : ""}
      formatOnBlur
      autosize
      minRows={3}
    />
  );
}

/** A user's e-mail and names, in the create and the edit form. */
export function UserFields({ user }: { user?: { email?: string; first_name?: string; last_name?: string } }) {
  return (
    <>
      <TextInput label="E-mail" name="email" type="email" defaultValue={user?.email ?? ""} />
      <TextInput label="First name" name="first_name" defaultValue={user?.first_name ?? ""} />
      <TextInput label="Last name" name="last_name" defaultValue={user?.last_name ?? ""} />
    </>
  );
}

/** The page of a list route that answers an array, or `{data, total_count, page_count}` when asked for a count. */
export function asPage<T>(result: T[] | { data: T[]; total_count: number; page_count: number }) {
  return Array.isArray(result) ? { data: result, total_count: result.length, page_count: 1 } : result;
}
