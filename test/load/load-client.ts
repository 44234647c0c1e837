export * from '../../scripts/lib/stress/load-client';
