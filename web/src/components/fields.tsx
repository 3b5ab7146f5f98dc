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

type UserTenants = {
  associated_tenants: {
    tenant: string;
    roles: string[];
    resource_instance_roles?: { resource: string; resource_instance: string; role: string }[];
  }[];
};

/**
 * A user's roles as a list reads them (asked with `include_resource_instance_roles`): tenant roles "admin @ acme"
 * and instance roles "owner on folder:reports"; within one tenant (`tenant`), without the "@ tenant".
 */
export function rolesText(user: UserTenants, tenant?: string): string {
  return user.associated_tenants
    .filter((t) => tenant === undefined || t.tenant === tenant)
    .flatMap((t) => [
      ...t.roles.map((role) => (tenant === undefined ? `${role} @ ${t.tenant}` : role)),
      ...(t.resource_instance_roles ?? []).map((r) => `${r.role} on ${r.resource}:${r.resource_instance}`),
    ])
    .join(", ");
}
