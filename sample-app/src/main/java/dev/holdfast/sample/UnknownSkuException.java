package dev.holdfast.sample;

/**
 * Thrown when a reservation names a SKU that the stock table does not have.
 */
public class UnknownSkuException extends RuntimeException {

	public UnknownSkuException(String sku) {
		super("Unknown SKU '" + sku + "': the stock table has no such row (configure it with sample.stock." + sku
				+ "=<units>)");
	}

}
