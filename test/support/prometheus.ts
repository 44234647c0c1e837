export * from '../../scripts/lib/prometheus-samples';
