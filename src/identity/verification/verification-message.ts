import type { Channel, OutgoingMessage } from '../transports/transport.js';
import type { VerificationPurpose } from './verification-code-records.js';

const subjects: Record<VerificationPurpose, string> = {
  contact_verify: 'Confirm your contact details',
  login: 'Your sign-in code',
  reset_password: 'Reset your password',
  sso_otc: 'Your one-time code',
};

const leads: Record<VerificationPurpose, string> = {
  contact_verify: 'Your confirmation code is',
  login: 'Your sign-in code is',
  reset_password: 'Your password reset code is',
  sso_otc: 'Your one-time code is',
};

/** The text of a verification message: the code, the link carrying it if any, and how long it lasts. */
export function verificationMessage(input: {
  channel: Channel;
  to: string;
  purpose: VerificationPurpose;
  code: string;
  link: string | undefined;
  lifetimeSeconds: number;
}): OutgoingMessage {
  const lifetime =
    input.lifetimeSeconds >= 120
      ? `${Math.round(input.lifetimeSeconds / 60)} minutes`
      : `${input.lifetimeSeconds} seconds`;
  const lines = [`${leads[input.purpose]} ${input.code}. It expires in ${lifetime}.`];
  if (input.link) lines.push('', `Or open this link: ${input.link}`);
  if (input.channel === 'email') {
    lines.push('', 'If you did not ask for it, ignore this message: nothing changes without the code.');
  }
  return {
    channel: input.channel,
    to: input.to,
    subject: subjects[input.purpose],
    text: lines.join('\n'),
    code: input.code,
    ...(input.link ? { link: input.link } : {}),
    purpose: input.purpose,
  };
}
