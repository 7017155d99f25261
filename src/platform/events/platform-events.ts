import { z } from 'zod';
import type { EventCatalog } from '../../events/event-catalog.js';

/** The platform's name in the `producer` field of its events. */
export const platformProducer = 'platform';

export const referenceEntities = ['subject', 'level', 'format', 'grade_range'] as const;
export type ReferenceEntity = (typeof referenceEntities)[number];

/**
 * The platform-owned events (spec: Events, Platform-owned events), the `data` of each message type.
 * A deleted reference key is announced as `deactivated`: for a subscriber it is gone from the list.
 */
export const referenceDataChanged = z.object({
  entity: z.enum(referenceEntities),
  key: z.string().min(1),
  action: z.enum(['created', 'updated', 'deactivated']),
});

export const featureFlagChanged = z.object({
  flagKey: z.string().min(1),
  service: z.string().min(1).optional(),
  action: z.enum(['created', 'updated', 'disabled']),
  version: z.number().int().positive().describe('Grows by one at every change of the flag'),
});

export const i18nChanged = z.object({
  locale: z.string().min(1),
  namespace: z.string().min(1).optional(),
  action: z.enum(['published', 'revoked']),
  version: z.string().min(1),
});

export const platformEvents = {
  'platform.reference_data.changed': referenceDataChanged,
  'platform.feature_flag.changed': featureFlagChanged,
  'platform.i18n.changed': i18nChanged,
} satisfies EventCatalog;

export type PlatformEvents = typeof platformEvents;
export type ReferenceDataChanged = z.infer<typeof referenceDataChanged>;
