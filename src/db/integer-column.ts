import { z } from 'zod';

/**
 * A whole number that fits a PostgreSQL `integer` column (32 bits, signed). zod's `.int()` allows any
 * safe integer, and a larger one failed the insert: a 500 where the sender's 400 naming it belongs.
 */
export const integerColumnSchema = z.number().int().min(-2_147_483_648).max(2_147_483_647);
