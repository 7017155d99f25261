import type { z } from 'zod';
import { crmEnvelopeOf, crmSchemaVersion } from '../crm-contract/crm-envelope.js';
import {
  crmEntities,
  crmMessageTypeNames,
  crmMessageTypes,
  type CrmEntity,
} from '../crm-contract/crm-events.js';

/**
 * What management accepts from crm: the schema versions, the message types with the record each
 * reports, and each record's natural key and statuses. The contract's rules by default; a fixed
 * version of management (a new status, a new schema version) is a new set of rules, and dead letters
 * replayed under it are applied.
 */
export interface CrmRules {
  schemaVersions: ReadonlySet<number>;
  messageTypes: Readonly<Record<string, { entity: CrmEntity; envelope: z.ZodType }>>;
  entities: Readonly<Record<CrmEntity, { naturalKey: string; statuses: readonly string[] }>>;
}

export const contractRules: CrmRules = {
  schemaVersions: new Set([crmSchemaVersion]),
  messageTypes: Object.fromEntries(
    crmMessageTypeNames.map((type) => [
      type,
      { entity: crmMessageTypes[type].entity, envelope: crmEnvelopeOf(type, crmMessageTypes[type].data) },
    ]),
  ),
  entities: crmEntities,
};
