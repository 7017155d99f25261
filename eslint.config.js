// @ts-check
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/**
 * Layering (docs/architecture.md, "Layers"): adapters/ (storage, transports, the NATS bus) are chosen
 * and injected by the composition roots, never imported by the modules; the engine (oidc-provider) is
 * used in src/oidc only; src/http, the plumbing every module shares, imports no module.
 */
const compositionRoots = [
  'src/service.ts',
  'src/main.ts',
  'src/run-service.ts',
  'src/cli/**',
  'src/cluster/**',
];
// Factories that pick an adapter from the configuration, the package entry that offers the NATS bus to
// the ecosystem's services, and the crm simulator (a program of its own).
const adapterFactories = [
  'src/platform/client/index.ts',
  'src/events/create-event-bus.ts',
  'src/identity/transports/configured-transports.ts',
  'src/oidc/provider.ts',
  'src/management/crm-simulator/crm-sim.ts',
];
const noAdapters = {
  group: ['**/adapters/**'],
  message:
    'Modules get adapters injected by the composition root (src/service.ts); see docs/architecture.md.',
};
// A module handed the provider by the composition root may name its type.
const engineOnlyInOidc = {
  name: 'oidc-provider',
  allowTypeImports: true,
  message: 'The engine is used in src/oidc only (docs/architecture.md, "Layers").',
};
const engineInternalsOnlyInOidc = {
  group: ['oidc-provider/**'],
  message: 'The engine and its internals are used in src/oidc only (docs/architecture.md, "Layers").',
};
const noModulesInHttp = {
  group: ['**/identity/**', '**/oidc/**', '**/platform/**', '**/management/**', '**/cli/**'],
  message: 'src/http is shared plumbing: it imports no module (docs/architecture.md, "Layers").',
};

export default tseslint.config(
  { ignores: ['node_modules', 'dist', '.data', 'coverage'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': ['error', { allow: ['warn', 'error'] }],
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: [...compositionRoots, ...adapterFactories, 'src/oidc/**'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { paths: [engineOnlyInOidc], patterns: [noAdapters, engineInternalsOnlyInOidc] },
      ],
    },
  },
  {
    files: ['src/oidc/**/*.ts'],
    ignores: adapterFactories,
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: [noAdapters] }] },
  },
  {
    files: ['src/http/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { paths: [engineOnlyInOidc], patterns: [noAdapters, noModulesInHttp, engineInternalsOnlyInOidc] },
      ],
    },
  },
  {
    files: ['views/assets/**/*.js'],
    languageOptions: { globals: globals.browser, sourceType: 'script' },
  },
  {
    files: ['test/**', 'bench/**', 'conformance/**', 'src/cli/**'],
    rules: { 'no-console': 'off' },
  },
);
