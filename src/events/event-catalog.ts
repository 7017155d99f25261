import type { z } from 'zod';
import { envelopeOf } from './envelope.js';

/** messageType → zod schema of its `data`: what a producer may publish, checked before it is stored. */
export type EventCatalog = Record<string, z.ZodType>;

export type EventData<Catalog extends EventCatalog, Type extends keyof Catalog> = z.input<Catalog[Type]>;

/** JSON Schema (draft 2020-12) of the whole envelope of each message type in the catalogue. */
export function catalogJsonSchemas(catalog: EventCatalog): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(catalog).map(([messageType, data]) => [
      messageType,
      envelopeOf(messageType, data).toJSONSchema({ target: 'draft-2020-12', io: 'output' }),
    ]),
  );
}
