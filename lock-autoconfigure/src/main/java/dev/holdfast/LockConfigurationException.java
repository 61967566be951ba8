package dev.holdfast;

/**
 * A misconfiguration found at startup: a malformed expression, a bad duration, an unknown or
 * unavailable backend. Reported by a failure analyzer with the action to take.
 */
public class LockConfigurationException extends LockException {

	private final String action;

	/**
	 * @param description what is wrong, naming the element (method, property) at fault
	 * @param action what to change
	 */
	public LockConfigurationException(String description, String action) {
		super(description, null);
		this.action = action;
	}

	/** What the user should change. */
	public String getAction() {
		return this.action;
	}

}
