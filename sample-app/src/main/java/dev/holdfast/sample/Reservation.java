package dev.holdfast.sample;

/**
 * The outcome of one reservation attempt.
 *
 * @param sku the SKU
 * @param status what happened
 * @param fencingToken the fencing token of the lock under which the attempt ran
 * @param instance the instance that served it
 */
public record Reservation(String sku, Status status, long fencingToken, String instance) {

	/**
	 * What a reservation attempt did.
	 */
	public enum Status {

		/** One unit was taken. */
		RESERVED,

		/** No unit was left. */
		SOLD_OUT,

		/** The write was rejected because a later lock holder had written the row. */
		FENCED

	}

}
