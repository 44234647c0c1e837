export * from '../../scripts/lib/test-chain';
