// Mocha's settings. With test files named on the command line (`npx mocha dist/test/x.test.js`)
// only those run; without, the whole suite does. (Mocha appends a config's `spec` to the files
// given, so a fixed `spec` here would run everything every time.)
const named = process.argv.slice(2).some((arg) => arg.endsWith('.test.js'));

module.exports = {
  ...(named ? {} : { spec: ['dist/test/**/*.test.js'] }),
  require: ['dist/test/support/root-hooks.js'],
  timeout: 60000,
  slow: 2000,
  reporter: 'dist/test/support/timed-spec-reporter.js',
  exit: true,
};
