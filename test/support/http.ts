export * from '../../scripts/lib/http-request';
