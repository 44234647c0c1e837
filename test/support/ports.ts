export { freePort } from '../../config/free-port';
