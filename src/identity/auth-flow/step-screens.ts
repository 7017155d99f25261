import type { FlowSession } from './flow-session.js';
import type { StepScreen } from './step.js';

/**
 * Screens of steps that don't describe their own (`AuthFlowStep.screen`): the built-in ids have a
 * known shape; any other step gets a bare screen with its id as the title.
 */
export function fallbackScreen(stepId: string, session: Pick<FlowSession, 'tempData'>): StepScreen {
  const identifier = session.tempData.identifier as string | undefined;
  const data = identifier ? { identifier } : undefined;
  switch (stepId) {
    case 'password':
      return {
        title: 'Enter your password',
        fields: [
          {
            name: 'password',
            type: 'password',
            label: 'Password',
            required: true,
            autocomplete: 'current-password',
          },
        ],
        ...(data ? { data } : {}),
      };
    case 'otp-code':
      return {
        title: 'Enter the code',
        description: identifier ? `We sent a code to ${identifier}.` : 'We sent you a code.',
        fields: [
          {
            name: 'code',
            type: 'one-time-code',
            label: 'Code',
            required: true,
            autocomplete: 'one-time-code',
          },
        ],
        ...(data ? { data } : {}),
      };
    default:
      return { title: stepId, fields: [], ...(data ? { data } : {}) };
  }
}
