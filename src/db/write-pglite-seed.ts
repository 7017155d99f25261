/** `npm run build`'s last step: dist/pglite-seed/ from the compiled migrations (pglite-seed.ts says why). */
import { buildPgliteSeed, pgliteSeedDirectory } from './pglite-seed.js';

await buildPgliteSeed(pgliteSeedDirectory);
