import { z } from 'zod';

const snakeCase = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;
// The grade-range literals of the spec: g1-2, g3-4, ..., g9-11.
const gradeLiteral = /^g\d{1,2}-\d{1,2}$/;

/** A reference-data key: stable snake_case (spec: Reference data entities). */
export const snakeCaseKeySchema = z
  .string()
  .max(100)
  .regex(snakeCase, 'must be snake_case: lower-case letters and digits joined by single underscores');

/** Grade ranges also take the listed literal form g<from>-<to>. */
export const gradeRangeKeySchema = z
  .string()
  .max(100)
  .refine((key) => snakeCase.test(key) || gradeLiteral.test(key), {
    message: 'must be snake_case or a grade literal like g1-2 or g9-11',
  });
