/**
 * Tests run on the compiled output of `tsc -b` (tests live beside the code as
 * `*.test.ts` and compile to `dist/**\/*.test.js`), so jest needs no
 * TypeScript transform and runs what ships.
 */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/packages', '<rootDir>/services', '<rootDir>/test', '<rootDir>/bench'],
  testMatch: ['**/dist/**/*.test.js'],
  testPathIgnorePatterns: ['/node_modules/'],
  moduleFileExtensions: ['js', 'json'],
  testTimeout: 60000,
};
