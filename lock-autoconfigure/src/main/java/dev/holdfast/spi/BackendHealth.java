package dev.holdfast.spi;

import java.util.Map;

/**
 * A backend that can tell whether it is able to serve locks now, for health checks. Optional:
 * a backend without it is reported as unknown.
 */
public interface BackendHealth {

	/**
	 * Checks the backend with at most one bounded round trip per server it uses.
	 * @return whether locks can be taken, with details for operators (no secrets)
	 * @throws RuntimeException when the backend cannot be reached; the check counts as down
	 */
	Check checkHealth();

	/**
	 * The outcome of a health check.
	 *
	 * @param up whether the backend can serve locks
	 * @param details what an operator should see: server version, reachable nodes, quorum
	 */
	record Check(boolean up, Map<String, Object> details) {

		/**
		 * The details are copied.
		 */
		public Check {
			details = Map.copyOf(details);
		}

		/** A backend that can serve locks. */
		public static Check up(Map<String, Object> details) {
			return new Check(true, details);
		}

		/** A backend that answers but cannot serve locks (e.g. below quorum). */
		public static Check down(Map<String, Object> details) {
			return new Check(false, details);
		}

	}

}
