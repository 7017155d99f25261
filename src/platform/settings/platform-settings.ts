import type { z } from 'zod';
import type { Queryable } from '../../db/database.js';

/**
 * Platform-owned system settings (table platform_settings, key → JSON). Each setting is declared once
 * with its schema and default, and read and written only through that declaration, so a stored value
 * is always checked against the schema its reader expects.
 */
export interface PlatformSetting<Value> {
  key: string;
  schema: z.ZodType<Value>;
  /** The value while none is stored. */
  defaultValue: Value;
}

export function defineSetting<Value>(
  key: string,
  schema: z.ZodType<Value>,
  defaultValue: Value,
): PlatformSetting<Value> {
  return { key, schema, defaultValue };
}

/**
 * The stored value, or the default when none is stored. A stored value that no longer matches the
 * schema is a deployment error and is reported as such, never silently replaced.
 */
export async function readSetting<Value>(db: Queryable, setting: PlatformSetting<Value>): Promise<Value> {
  const row: { value: unknown } | undefined = await db('platform_settings')
    .where({ key: setting.key })
    .first('value');
  return settingValue(setting, row);
}

/**
 * readSetting as a scalar subquery, for a statement that reads the setting alongside other things:
 * `{ value }` when a value is stored, null when none is; `settingValue` checks what it answers.
 */
export function storedSettingRead(setting: PlatformSetting<unknown>): {
  sql: string;
  bindings: Record<string, unknown>;
} {
  return {
    sql: `select jsonb_build_object('value', value) from platform_settings where key = :settingKey`,
    bindings: { settingKey: setting.key },
  };
}

/** The stored value (`{ value }`; none stored: undefined or null) checked against the schema, or the default. */
export function settingValue<Value>(
  setting: PlatformSetting<Value>,
  stored: { value: unknown } | null | undefined,
): Value {
  if (!stored) return setting.defaultValue;
  const parsed = setting.schema.safeParse(stored.value);
  if (!parsed.success) {
    throw new Error(`platform setting ${setting.key} holds an invalid value: ${parsed.error.message}`);
  }
  return parsed.data;
}

export async function writeSetting<Value>(
  db: Queryable,
  setting: PlatformSetting<Value>,
  value: Value,
  now: Date,
): Promise<void> {
  const checked = setting.schema.parse(value);
  await db('platform_settings')
    .insert({ key: setting.key, value: JSON.stringify(checked), updated_at: now })
    .onConflict('key')
    .merge({ value: JSON.stringify(checked), updated_at: now });
}

/** Forgets the stored value: the default applies again. */
export async function clearSetting(db: Queryable, setting: PlatformSetting<unknown>): Promise<void> {
  await db('platform_settings').where({ key: setting.key }).delete();
}
