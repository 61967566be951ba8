package dev.holdfast;

import java.util.List;

/**
 * The leases this instance holds now, for operators: Holdfast's lock template implements it
 * (inject it as {@code HeldLeases}). Leases held by other instances are not listed.
 */
public interface HeldLeases {

	/** The name of the backend that keeps the locks ({@code redis}, {@code jdbc}, ...). */
	String backendName();

	/**
	 * The leases this instance holds now, including the locks of scheduled jobs while they run.
	 */
	List<LeaseInfo> heldLeases();

}
