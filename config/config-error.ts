/** A setting (or the config file) is wrong; the message names it and says what it must be. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
