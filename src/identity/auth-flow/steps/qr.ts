import { z } from 'zod';
import { ApiError } from '../../../http/api-error.js';
import {
  consumeApprovedQrLogin,
  createQrLoginRequest,
  qrLoginStatus,
} from '../../qr-login/qr-login-requests.js';
import type { AuthFlowStep, StepContext } from '../step.js';

/** Where a scanning device approves: a page of this service; the token rides in the fragment. */
export const qrApprovePath = '/qr-approve.html';

function tokenOf(context: StepContext): string {
  const token = context.session.tempData.qrToken;
  if (typeof token !== 'string') throw new ApiError(410, 'qr_expired', 'This QR code expired. Start again.');
  return token;
}

/**
 * Built-in step `qr` (login): the screen shows a QR code (SVG rendered on the server) of a one-time
 * approval address; a device already signed in to this service scans it and approves
 * (POST /auth/qr/approve); the waiting page polls POST /auth/qr/status and then submits this step,
 * which takes the approval once and signs in as the approving user. 2 minutes, single use.
 */
export function createQrStep(deps: { issuer: string }): AuthFlowStep<Record<string, unknown>> {
  return {
    id: 'qr',
    flows: ['login'],
    authenticates: true,
    input: z.object({}).passthrough(),
    async prepare(context) {
      // The device asking (this request's browser and address), for the approving device to show.
      // And the application it signs in to, when an authorization's login page shows the code.
      const { token } = await createQrLoginRequest(
        context.db,
        context.clock.now(),
        context.request,
        context.session.context.interactionUid,
      );
      return { tempData: { qrToken: token } };
    },
    async run(context) {
      const token = tokenOf(context);
      const now = context.clock.now();
      const approved = await consumeApprovedQrLogin(context.db, token, now);
      // Approving proves no new authentication: the sign-in is as old as the approver's.
      // The session it starts ends with the approving one (startedBySessionId, flow-engine.ts).
      if (approved) {
        return {
          userId: approved.userId,
          authMethod: 'qr',
          authenticatedAt: approved.authTime,
          ...(approved.sessionId ? { tempData: { startedBySessionId: approved.sessionId } } : {}),
        };
      }
      if ((await qrLoginStatus(context.db, token, now)) === 'pending') {
        throw new ApiError(
          409,
          'qr_pending',
          'Scan the code with a device where you are signed in, and approve.',
        );
      }
      throw new ApiError(410, 'qr_expired', 'This QR code expired or was used. Start again.');
    },
    async screen(context) {
      const token = tokenOf(context);
      const approveUrl = `${deps.issuer}${qrApprovePath}#${new URLSearchParams({ token })}`;
      return {
        title: 'Sign in with your phone',
        description: 'Scan this code with a device where you are signed in, and approve there.',
        fields: [],
        data: {
          qr: { svg: await qrCodeSvg(approveUrl), approveUrl, token },
        },
      };
    },
  };
}

/**
 * The QR code as SVG. qrcode (with pngjs, ~60 files) is loaded at the first QR screen, not by every
 * start, whose CPU is mostly module loading: many installations never show one.
 */
async function qrCodeSvg(text: string): Promise<string> {
  const { default: QRCode } = await import('qrcode');
  return QRCode.toString(text, { type: 'svg', margin: 1 });
}
