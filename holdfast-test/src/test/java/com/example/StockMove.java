package com.example;

/** A move of stock: the warehouse and SKU name what is locked; the quantity is data. */
public record StockMove(String warehouseId, String sku, int quantity) {
}
