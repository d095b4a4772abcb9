// ESLint for the TypeScript of the extension and its tests (typescript-eslint, recommended).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'out/**', 'server/torch_mlir_lens/views/assets/**', 'node_modules/**', '.cache/**', '.venv/**', 'test-artifacts/**', 'bench/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      // `_name` marks a value deliberately unused (destructuring it away, a required parameter).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
    },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: {
      globals: { console: 'readonly', process: 'readonly', fetch: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', URL: 'readonly', window: 'readonly' },
    },
  },
  {
    // The e2e's Python extension stand-in: a plain CommonJS extension (no build step).
    files: ['tests/e2e/fake-python-extension/**/*.js'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', module: 'writable' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
