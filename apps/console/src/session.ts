import { type Me, ROLES, type RouteDef } from '@punctual/contract';
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';

export const SessionContext = createContext<Me | null>(null);

/** Who is signed in (the console renders only once it knows). */
export function useSession(): Me {
  const me = useContext(SessionContext);
  if (!me) throw new Error('useSession outside of a session');
  return me;
}

/** True when `role` may call `route`: roles rank as the contract lists them (viewer < operator < admin). */
export function roleMayCall(role: Me['role'], route: Pick<RouteDef, 'role'>): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(route.role);
}

/** Whether the person signed in may call `route`: the console shows no control the API would refuse. */
export function useMayCall(): (route: Pick<RouteDef, 'role'>) => boolean {
  const me = useSession();
  return (route) => roleMayCall(me.role, route);
}
