import { z } from 'zod';
import { adminAuditEventTypes, auditCliChange } from '../../admin/admin-audit.js';
import { allowedMethodsSetting } from '../../identity/auth-flow/allowed-methods.js';
import {
  builtInAuthenticatingLoginStepIds,
  builtInAuthMethodTypes,
  builtInStepIds,
  forcedSetupStepId,
} from '../../identity/auth-flow/built-in-steps.js';
import { flowKinds, type FlowKind } from '../../identity/auth-flow/flow-session.js';
import { loadFunnel, replaceFunnel, type FunnelStep } from '../../identity/auth-flow/funnel-steps.js';
import { readSetting, writeSetting } from '../../platform/settings/platform-settings.js';
import { UsageError, type CliCommand, type OptionValues } from '../command.js';

const asList = (value: unknown): string[] =>
  Array.isArray(value) ? value.map(String) : value === undefined ? [] : [String(value)];

function flowOf(values: OptionValues): FlowKind {
  const parsed = z.enum(flowKinds).safeParse(values.flow);
  if (!parsed.success) throw new UsageError(`--flow must be one of ${flowKinds.join(', ')}`);
  return parsed.data;
}

/**
 * `--step id[=provider][:optional][@group]`: the funnel in the order given; a step is mandatory unless
 * `:optional`. `oauth=<provider id>` is the third-party provider step (its `settings.provider`).
 */
const stepPattern =
  /^([A-Za-z0-9._-]{1,100})(?:=([a-z0-9_-]{1,100}))?(?::(mandatory|optional))?(?:@([A-Za-z0-9._-]{1,100}))?$/;

export function parseFunnelSteps(flow: FlowKind, specs: string[]): FunnelStep[] {
  if (specs.length === 0) throw new UsageError('give the funnel as --step id[:optional][@group]...');
  const seen = new Set<string>();
  const steps = specs.map((spec, index) => {
    const match = stepPattern.exec(spec);
    if (!match) throw new UsageError(`--step ${spec}: expected id[=provider][:optional][@group]`);
    const [, stepId, provider, necessity, group] = match;
    if (!builtInStepIds[flow].includes(stepId!)) {
      throw new UsageError(
        `--step ${stepId}: not a step of the ${flow} flow (${builtInStepIds[flow].join(', ')}; plugin steps: through the admin API)`,
      );
    }
    if (stepId === forcedSetupStepId) {
      throw new UsageError(
        `--step ${stepId}: the service adds it after a login's steps when a mandatory method is not set up yet; a funnel does not name it`,
      );
    }
    if (seen.has(stepId!)) throw new UsageError(`--step ${stepId}: appears twice`);
    seen.add(stepId!);
    if ((stepId === 'oauth') !== (provider !== undefined)) {
      throw new UsageError(
        stepId === 'oauth'
          ? '--step oauth=<provider id>: the oauth step names its provider'
          : `--step ${spec}: only the oauth step takes =<provider id>`,
      );
    }
    return {
      stepId: stepId!,
      mandatory: necessity !== 'optional',
      order: index + 1,
      ...(group ? { group } : {}),
      ...(provider ? { settings: { provider } } : {}),
    };
  });
  // As the admin API: a login funnel that proves nobody's identity would fail every sign-in.
  if (flow === 'login' && !steps.some((step) => builtInAuthenticatingLoginStepIds.includes(step.stepId))) {
    throw new UsageError(
      `a login funnel needs a step that proves who signs in (${builtInAuthenticatingLoginStepIds.join(', ')})`,
    );
  }
  return steps;
}

export const funnelsGetCommand: CliCommand = {
  name: 'funnels:get',
  usage: 'funnels:get --flow login|registration',
  summary: 'Show the steps of the login or registration funnel',
  options: { flow: { type: 'string' } },
  needsDatabase: true,
  parse: flowOf,
  async run(flow: FlowKind, context) {
    return { flow, steps: await loadFunnel(context!.db, flow) };
  },
};

export const funnelsSetCommand: CliCommand = {
  name: 'funnels:set',
  usage: 'funnels:set --flow login|registration --step id[=provider][:optional][@group]...',
  summary: 'Replace a funnel with the steps given, in order; applies to flows started after',
  options: { flow: { type: 'string' }, step: { type: 'string', multiple: true } },
  needsDatabase: true,
  parse(values) {
    const flow = flowOf(values);
    return { flow, steps: parseFunnelSteps(flow, asList(values.step)) };
  },
  async run({ flow, steps }: { flow: FlowKind; steps: FunnelStep[] }, context) {
    const { db, clock } = context!;
    await db.transaction(async (trx) => {
      const now = clock.now();
      const before = await loadFunnel(trx, flow);
      await replaceFunnel(trx, flow, steps, now);
      await auditCliChange(
        trx,
        adminAuditEventTypes.funnelReplaced,
        { flow, before: before.map((step) => step.stepId), after: steps.map((step) => step.stepId) },
        now,
      );
    });
    return { flow, steps: await loadFunnel(db, flow) };
  },
};

export const allowedMethodsGetCommand: CliCommand = {
  name: 'allowed-methods:get',
  usage: 'allowed-methods:get',
  summary: 'Show the sign-in methods users may enable',
  options: {},
  needsDatabase: true,
  async run(_values, context) {
    return { methods: await readSetting(context!.db, allowedMethodsSetting) };
  },
};

export const allowedMethodsSetCommand: CliCommand = {
  name: 'allowed-methods:set',
  usage: 'allowed-methods:set [--method M]... | --none',
  summary: `Replace the sign-in methods users may enable (${builtInAuthMethodTypes.join(', ')})`,
  options: { method: { type: 'string', multiple: true }, none: { type: 'boolean' } },
  needsDatabase: true,
  parse(values) {
    const methods = [...new Set(asList(values.method))];
    if (methods.length === 0 && values.none !== true) {
      throw new UsageError('give --method M... (or --none to allow no additional method)');
    }
    if (methods.length > 0 && values.none === true) throw new UsageError('--none takes no --method');
    const unknown = methods.filter((method) => !builtInAuthMethodTypes.includes(method));
    if (unknown.length > 0) {
      throw new UsageError(`--method ${unknown.join(', ')}: not one of ${builtInAuthMethodTypes.join(', ')}`);
    }
    return methods;
  },
  async run(methods: string[], context) {
    const { db, clock } = context!;
    await db.transaction(async (trx) => {
      const now = clock.now();
      const before = await readSetting(trx, allowedMethodsSetting);
      await writeSetting(trx, allowedMethodsSetting, methods, now);
      await auditCliChange(trx, adminAuditEventTypes.allowedMethodsChanged, { before, after: methods }, now);
    });
    return { methods };
  },
};
