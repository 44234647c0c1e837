export * from '../../scripts/lib/test-settings';
