import type { Messages } from '../../i18n/messages.js';
import type { Channel, OutgoingMessage } from '../transports/transport.js';

/**
 * The security changes a user is told of (ASVS 6.3.7: notify users of changes to their authentication
 * details). None carries a code or a link that grants access: they only say what happened.
 */
export type SecurityNotice =
  /** Sent to the previous contact: the account's email or phone is now `value` (masked). */
  | { kind: 'contact_replaced'; contact: 'email' | 'phone'; value: string }
  /** Sent to the account's other contact: `value` (masked) became a contact of the account. */
  | { kind: 'contact_added'; contact: 'email' | 'phone'; value: string }
  | { kind: 'password_changed' }
  | { kind: 'password_reset' }
  | { kind: 'auth_method_added' | 'auth_method_removed'; method: string }
  | { kind: 'new_device_sign_in'; device: string; ip: string; at: Date };

/** "2026-11-28 10:15 UTC": one unambiguous form, whatever the server's time zone. */
function formatTime(at: Date): string {
  return `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** The notice as a message in the user's language (English when that language has no translation). */
export function securityMessage(
  messages: Messages,
  language: string,
  notice: SecurityNotice,
  recipient: { channel: Channel; to: string },
): OutgoingMessage {
  const t = messages.in(language);
  const values: Record<string, string> = {};
  if (notice.kind === 'contact_replaced' || notice.kind === 'contact_added') {
    Object.assign(values, { contact: notice.contact, value: notice.value });
  } else if (notice.kind === 'auth_method_added' || notice.kind === 'auth_method_removed') {
    const id = `notifications.method.${notice.method}`;
    values.method = messages.has(id) ? t(id) : notice.method;
  } else if (notice.kind === 'new_device_sign_in') {
    Object.assign(values, {
      device: notice.device || t('notifications.device.unknown'),
      ip: notice.ip || '?',
      time: formatTime(notice.at),
    });
  }
  const lines = [t(`notifications.${notice.kind}.text`, values), '', t('notifications.not_you')];
  if (recipient.channel === 'email') lines.push('', t('notifications.automatic'));
  return {
    channel: recipient.channel,
    to: recipient.to,
    subject: t(`notifications.${notice.kind}.subject`, values),
    text: lines.join('\n'),
    purpose: `security_notice.${notice.kind}`,
  };
}
