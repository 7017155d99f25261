const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Checked before a value reaches a uuid column: PostgreSQL refuses a malformed uuid with an error. */
export const isUuid = (value: string): boolean => uuidPattern.test(value);
