import { WebhookSmsTransport } from '../../../adapters/transports/webhook-sms-transport.js';
import type { Config } from '../../config.js';
import type { Logger } from '../../logger.js';
import { DevelopmentTransport } from './development-transport.js';
import type { Channel, Transport } from './transport.js';
import { TransportRegistry } from './transport-registry.js';

export interface ConfiguredTransports {
  registry: TransportRegistry;
  /** The development outbox; registered only for the channels configured as `development`. */
  developmentMessages: DevelopmentTransport;
}

/**
 * The transports the configuration asks for (EMAIL_TRANSPORT, SMS_TRANSPORT), after the plugins given
 * by the embedding application: a plugin registered for a channel becomes that channel's default.
 * nodemailer (~40 files) is loaded only when SMTP is configured: a start's CPU is mostly module loading.
 */
export async function configuredTransports(
  config: Pick<
    Config,
    'emailTransport' | 'smtpUrl' | 'mailFrom' | 'smsTransport' | 'smsWebhookUrl' | 'smsWebhookSecret'
  >,
  logger: Logger,
  plugins: Transport[] = [],
): Promise<ConfiguredTransports> {
  const registry = new TransportRegistry(logger);
  for (const plugin of plugins) registry.register(plugin);

  const developmentChannels: Channel[] = [];
  if (config.emailTransport === 'smtp') {
    const { SmtpEmailTransport } = await import('../../../adapters/transports/smtp-email-transport.js');
    registry.register(new SmtpEmailTransport({ url: config.smtpUrl!, from: config.mailFrom }));
  } else if (config.emailTransport === 'development') {
    developmentChannels.push('email');
  }
  if (config.smsTransport === 'webhook') {
    registry.register(
      new WebhookSmsTransport({ url: config.smsWebhookUrl!, secret: config.smsWebhookSecret! }),
    );
  } else if (config.smsTransport === 'development') {
    developmentChannels.push('sms');
  }
  const developmentMessages = new DevelopmentTransport(developmentChannels, logger);
  if (developmentChannels.length > 0) {
    registry.register(developmentMessages);
    logger.warn(
      { channels: developmentChannels },
      'messages are not delivered: the development transport keeps them in memory and logs them',
    );
  }
  return { registry, developmentMessages };
}
