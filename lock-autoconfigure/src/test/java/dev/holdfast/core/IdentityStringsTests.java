package dev.holdfast.core;

import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class IdentityStringsTests {

	@Test
	void valuesWithTheirOwnStringPass() {
		assertThat(IdentityStrings.findIdentityValue("a")).isNull();
		assertThat(IdentityStrings.findIdentityValue(List.of(1, Set.of("b")))).isNull();
		assertThat(IdentityStrings.findIdentityValue(new Sku("acme", 7))).isNull();
		assertThat(IdentityStrings.findIdentityValue(new Batch("acme", new long[] { 1 }))).isNull();
	}

	@Test
	void aRecordComponentThatRendersAsAnIdentityStringIsFound() {
		Customer customer = new Customer();
		assertThat(IdentityStrings.findIdentityValue(new Reserve(customer, "x"))).isSameAs(customer);
		assertThat(IdentityStrings.findIdentityValue(List.of(new Reserve(customer, "x")))).isSameAs(customer);
		assertThat(IdentityStrings.findIdentityValue(new Holder(new Reserve(customer, "x")))).isSameAs(customer);
		assertThat(IdentityStrings.findIdentityValue(new Holder(Map.of("k", customer)))).isSameAs(customer);
	}

	@Test
	void aRecordTypeWithAnIdentityComponentTypeIsKnownAtStartup() {
		assertThat(IdentityStrings.findDeclaredIdentity(Reserve.class))
			.isEqualTo(new IdentityStrings.DeclaredIdentity("customer", Customer.class));
		assertThat(IdentityStrings.findDeclaredIdentity(Nested.class))
			.isEqualTo(new IdentityStrings.DeclaredIdentity("reserve.customer", Customer.class));
		assertThat(IdentityStrings.findDeclaredIdentity(Customers.class))
			.isEqualTo(new IdentityStrings.DeclaredIdentity("customers", Customer.class));
		assertThat(IdentityStrings.findDeclaredIdentity(Customer.class))
			.isEqualTo(new IdentityStrings.DeclaredIdentity("", Customer.class));
	}

	@Test
	void recordTypesWhoseComponentsDecideAtTheCallPass() {
		assertThat(IdentityStrings.findDeclaredIdentity(Sku.class)).isNull();
		assertThat(IdentityStrings.findDeclaredIdentity(Batch.class)).as("arrays are rendered by content").isNull();
		assertThat(IdentityStrings.findDeclaredIdentity(Holder.class)).as("an Object component").isNull();
		assertThat(IdentityStrings.findDeclaredIdentity(Node.class)).as("a recursive record type").isNull();
	}

	record Sku(String tenant, long id) {
	}

	record Batch(String tenant, long[] orderIds) {
	}

	/** An entity whose toString() is Object's. */
	static class Customer {

	}

	record Reserve(Customer customer, String sku) {
	}

	record Nested(String tenant, Reserve reserve) {
	}

	record Customers(Customer[] customers) {
	}

	record Holder(Object value) {
	}

	record Node(String value, Node next) {
	}

}
