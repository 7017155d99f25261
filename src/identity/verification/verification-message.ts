import { pageMessages } from '../../i18n/page-language.js';
import type { Channel, OutgoingMessage } from '../transports/transport.js';
import type { VerificationPurpose } from './verification-code-records.js';

/**
 * The text of a verification message in the person's language (views/locales/<lang>/notifications.json,
 * `verification.*`): the code, the link carrying it if any, and how long it lasts.
 */
export function verificationMessage(input: {
  channel: Channel;
  to: string;
  purpose: VerificationPurpose;
  code: string;
  link: string | undefined;
  lifetimeSeconds: number;
  /** The language of the page that asked for the code; English when unknown. */
  lang?: string | undefined;
}): OutgoingMessage {
  const messages = pageMessages();
  const t = messages.in(input.lang ?? 'en');
  const lifetime =
    input.lifetimeSeconds >= 120
      ? t('common.wait.minutes', { count: Math.round(input.lifetimeSeconds / 60) })
      : t('common.wait.seconds', { count: input.lifetimeSeconds });
  const lines = [t(`notifications.verification.${input.purpose}.text`, { code: input.code, lifetime })];
  if (input.link) lines.push('', t('notifications.verification.link', { link: input.link }));
  if (input.channel === 'email') lines.push('', t('notifications.verification.ignore'));
  return {
    channel: input.channel,
    to: input.to,
    subject: t(`notifications.verification.${input.purpose}.subject`),
    text: lines.join('\n'),
    code: input.code,
    ...(input.link ? { link: input.link } : {}),
    purpose: input.purpose,
  };
}
