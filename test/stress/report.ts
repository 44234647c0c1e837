export * from '../../scripts/lib/stress/report';
