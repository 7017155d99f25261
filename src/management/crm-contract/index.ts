// The crm → management contract as code (package export "identity-service/crm-contract"): what crm
// publishes and serves, checked by the same schemas management reads with. docs/crm-contract.md
// describes it; docs/crm-contract/schemas/ holds the same schemas as JSON Schema.
export {
  createCrmEnvelope,
  crmEnvelopeOf,
  crmEnvelopeSchema,
  crmSchemaVersion,
  crmSource,
  refusingPaymentPii,
  type CrmEnvelope,
} from './crm-envelope.js';
export {
  crmEntities,
  crmEventSchemas,
  crmMessageTypeNames,
  crmMessageTypes,
  isCrmMessageType,
  type CrmEntity,
  type CrmEventData,
  type CrmMessageType,
} from './crm-events.js';
export {
  balanceAggregateSchema,
  crmSnapshotPaths,
  crmSnapshotScopes,
  maximumPeriodDays,
  payoutPeriodQuerySchema,
  periodQuerySchema,
  salesAggregateSchema,
  teacherPayoutsSchema,
  type BalanceAggregate,
  type Period,
  type SalesAggregate,
  type TeacherPayouts,
} from './crm-snapshots.js';
export { crmContractJsonSchemas } from './json-schemas.js';
export { findPaymentPii } from './payment-pii.js';
export {
  amountMinorSchema,
  crmIdSchema,
  crmKeySchema,
  currencySchema,
  daySchema,
  instantSchema,
  minorUnitDigits,
  monthSchema,
  versionSchema,
} from './value-formats.js';
