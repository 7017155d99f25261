import type { z } from 'zod';
import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import type { RequestInfo } from '../../http/request-info.js';
import type { PasswordHashing } from '../passwords/password-hash.js';
import type { FlowKind, FlowSession } from './flow-session.js';

/** Who is asking (src/http/request-info.ts): what rate limits, lockout and the audit log need. */
export type { RequestInfo };

export interface StepContext {
  db: Database;
  clock: Clock;
  /** The service's argon2id parameters (src/defaults.ts passwordHashing). */
  passwordHashing: PasswordHashing;
  session: FlowSession;
  request: RequestInfo;
}

/** What an accepted step contributes to the flow. */
export interface StepResult {
  /** The user the flow is about, once a step has identified them (may stay unknown until the end). */
  userId?: string | undefined;
  /** Values later steps (or the page) need, e.g. the identifier to show on the password screen. */
  tempData?: Record<string, unknown>;
  /** The authentication method this step proved (OIDC `amr` value), e.g. `pwd`. */
  authMethod?: string;
  /**
   * With `authMethod`: when that proof was made, if before now. A QR approval vouches with the
   * approving device's session, whose last authentication may be old: the session this flow starts
   * must not pass for a fresh authentication (re-authentication checks read it). Absent: now.
   */
  authenticatedAt?: Date;
}

/** One input of a step's screen (spec: a plugin step may be delivered as a schema of fields). */
export interface StepField {
  name: string;
  type: 'text' | 'email' | 'tel' | 'password' | 'one-time-code' | 'checkbox' | 'number' | 'date' | 'select';
  label: string;
  required?: boolean;
  /** select: the values to choose from (registration profile fields). */
  options?: { value: string; label: string }[];
  /** HTML autocomplete hint, e.g. `username`, `current-password`, `one-time-code`. */
  autocomplete?: string;
}

/** What the client shows for a step: title, description, fields, and display data (e.g. a TOTP URL). */
export interface StepScreen {
  title: string;
  description?: string;
  fields: StepField[];
  data?: Record<string, unknown>;
}

/**
 * One step of an auth flow (spec: built-in step ids phone-email, password, otp-code, ...; plugins add
 * more). A step validates its input with its own schema and throws an ApiError to refuse it; the
 * engine keeps the flow where it was, so the user can try again.
 */
export interface AuthFlowStep<Input = unknown> {
  id: string;
  input: z.ZodType<Input>;
  run(context: StepContext, input: Input): Promise<StepResult>;
  /** The flows this implementation serves; absent = all. A flow-specific one wins over a general one. */
  flows?: readonly FlowKind[];
  /**
   * Whether the step proves who the person is (its result carries an `authMethod`): a password, a code,
   * an approval. A login funnel needs at least one such step, or nobody could sign in (the admin API
   * refuses such a funnel). Absent: it only identifies or asks (phone-email, consent, a plugin's page).
   */
  authenticates?: boolean;
  /** What the client shows for this step; absent = a screen the engine derives from the step id. */
  screen?(context: StepContext): StepScreen | Promise<StepScreen>;
  /**
   * Runs when the step becomes the next one, before the client sees it (e.g. sends a code, begins a
   * setup). Its tempData is kept; throwing refuses the step that led here.
   */
  prepare?(context: StepContext): Promise<StepResult | void>;
  /**
   * Checks the step's configuration in a funnel (`settings` of auth_flow_steps) when an administrator
   * sets the funnel: answers what is wrong, or nothing. Absent: the step takes no settings.
   */
  checkSettings?(settings: Record<string, unknown> | undefined): string | undefined;
}

/** This step's configuration in the funnel the flow started with. */
export function stepSettingsOf(context: StepContext, stepId: string): Record<string, unknown> {
  return context.session.plan.steps?.[stepId]?.settings ?? {};
}
