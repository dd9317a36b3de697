import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'src/gen/', 'proto/', 'bench/proto/ts-proto-gen/', '.tmp/', 'bench/results/', '.scratch/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
  },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
      // node:test's describe/it/test return promises the runner itself awaits and reports.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite'] }] },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      // A default clause is a deliberate catch-all here (open proto enums, kinds a switch does not act on).
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/require-await': 'error',
    },
  },
  // Plain JS, and the TS files tsconfig.json leaves out (they import generated code that may be absent): no type information.
  { files: ['**/*.js', '**/*.mjs', 'bench/proto-encode.ts', 'bench/proto/**'], ...tseslint.configs.disableTypeChecked },
);
