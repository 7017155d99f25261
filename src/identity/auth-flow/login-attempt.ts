import type { LoginAttempt } from '../brute-force/login-protection.js';
import type { StepContext } from './step.js';

/**
 * What the brute-force protection needs to know of a login step's attempt: who (the flow's user, or
 * its identifier when no account has it), from where (IP, device cookie), and which factors this
 * sign-in already proved (the amr values of the steps before).
 */
export function loginAttemptOf({ session, request }: StepContext, method: string): LoginAttempt {
  const identifier = session.tempData.identifier;
  const proven = session.tempData.authMethods;
  return {
    userId: session.userId,
    ip: request.ip,
    addressBlock: request.addressBlock,
    identifier: typeof identifier === 'string' ? identifier : undefined,
    deviceCookie: request.deviceCookie,
    provenFactors: Array.isArray(proven) ? proven.filter((item) => typeof item === 'string') : [],
    method,
  };
}
