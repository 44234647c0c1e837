export * from '../../scripts/lib/refund-reads';
