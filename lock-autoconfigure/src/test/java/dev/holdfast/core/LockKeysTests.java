package dev.holdfast.core;

import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

class LockKeysTests {

	private final LockKeys keys = new LockKeys("holdfast:", 200);

	@Test
	void aPrefixWithAnotherCharacterFailsNamingIt() {
		assertThatIllegalArgumentException().isThrownBy(() -> new LockKeys("orders:%7B", 200))
			.withMessage("Key prefix 'orders:%7B' contains '%': use letters, digits, ':' and ._~/@+=,;!$&'()*-");
		assertThat(new LockKeys("orders:eu-1:", 200).encode("n", null)).isEqualTo("orders:eu-1:n");
	}

	@Test
	void nameAloneAndNameWithKey() {
		assertThat(this.keys.encode("orders", null)).isEqualTo("holdfast:orders");
		assertThat(this.keys.encode("orders", 42)).isEqualTo("holdfast:orders:42");
	}

	@Test
	void maskHidesTheKeyPartAndKeepsTheName() {
		assertThat(LockKeys.mask(this.keys.encode("orders", "alice@example.com"), "holdfast:"))
			.isEqualTo("holdfast:orders:******");
		assertThat(LockKeys.mask(this.keys.encode("orders", null), "holdfast:")).isEqualTo("holdfast:orders");
		String shortened = this.keys.encode("orders", "x".repeat(500));
		assertThat(LockKeys.mask(shortened, "holdfast:")).isEqualTo("holdfast:orders#******");
		assertThat(LockKeys.mask(new LockKeys("app:locks:", 200).encode("a/b", 7), "app:locks:"))
			.isEqualTo("app:locks:a/b:******");
	}

	@Test
	void maskKeepsThePermitSlotIndexVisible() {
		assertThat(LockKeys.mask(this.keys.encodeSlot("exports", null, 0), "holdfast:")).isEqualTo("holdfast:exports#0");
		assertThat(LockKeys.mask(this.keys.encodeSlot("exports", "alice@example.com", 12), "holdfast:"))
			.isEqualTo("holdfast:exports:******#12");
		assertThat(LockKeys.mask(this.keys.encodeSlot("exports", "t1", -1), "holdfast:"))
			.isEqualTo("holdfast:exports:******#-1");
		assertThat(LockKeys.mask(this.keys.encodeSlot("exports", "x".repeat(500), 1), "holdfast:"))
			.isEqualTo("holdfast:exports#******");
	}

	@Test
	void separatorsInNamesAndKeysCannotMakeTwoPairsMeet() {
		List<String[]> pairs = List.of(new String[] { "a:b", "c" }, new String[] { "a", "b:c" },
				new String[] { "a:b:c", null }, new String[] { "a", "b%3Ac" }, new String[] { "a%3Ab", "c" },
				new String[] { "a", "b#c" }, new String[] { "a", "{b}c" });
		Set<String> encoded = new HashSet<>();
		for (String[] pair : pairs) {
			assertThat(encoded.add(this.keys.encode(pair[0], pair[1]))).as(String.join("|", pair[0], "" + pair[1]))
				.isTrue();
		}
	}

	@Test
	void encodedKeysHaveNoBracesWhitespaceOrControlCharacters() {
		String key = this.keys.encode("n", "{tag} x\n\t\u0000\u00e9\ud83d\ude00");
		assertThat(key).doesNotContain("{", "}", " ", "\n", "\t", "\u0000").startsWith("holdfast:n:");
		assertThat(key).endsWith("%C3%A9%F0%9F%98%80");
	}

	@Test
	void longKeysAreHashedAndStayDistinct() {
		String a = this.keys.encode("orders", "x".repeat(500));
		String b = this.keys.encode("orders", "x".repeat(499) + "y");
		assertThat(a).hasSizeLessThanOrEqualTo(200).startsWith("holdfast:orders").contains("#");
		assertThat(b).hasSizeLessThanOrEqualTo(200).isNotEqualTo(a);
		assertThat(this.keys.encode("orders", "x".repeat(500))).isEqualTo(a);
	}

	@Test
	void arraysAreRenderedElementByElement() {
		assertThat(this.keys.encode("n", new Object[] { 1, "a" })).isEqualTo("holdfast:n:%7B1,%20a%7D");
	}

	@Test
	void equalSetsRenderOneKeyWhateverTheirIterationOrder() {
		Set<String> hashed = new HashSet<>(List.of("apple", "pear", "plum", "kiwi"));
		Set<String> linked = new LinkedHashSet<>(List.of("plum", "kiwi", "apple", "pear"));
		Set<String> reversed = new TreeSet<>(Comparator.reverseOrder());
		reversed.addAll(hashed);
		String expected = "holdfast:n:%5Bapple,%20kiwi,%20pear,%20plum%5D";
		assertThat(this.keys.encode("n", hashed)).isEqualTo(expected);
		assertThat(this.keys.encode("n", linked)).isEqualTo(expected);
		assertThat(this.keys.encode("n", Set.of("plum", "apple", "kiwi", "pear"))).isEqualTo(expected);
		assertThat(this.keys.encode("n", reversed)).isEqualTo(expected);
	}

	@Test
	void setsInsideListsArraysAndMapsAreSortedToo() {
		Set<String> linked = new LinkedHashSet<>(List.of("b", "a"));
		assertThat(this.keys.encode("n", List.of(linked, "c"))).isEqualTo("holdfast:n:%5B%5Ba,%20b%5D,%20c%5D");
		assertThat(this.keys.encode("n", new Object[] { linked })).isEqualTo("holdfast:n:%7B%5Ba,%20b%5D%7D");
		assertThat(this.keys.encode("n", Map.of("k", linked))).isEqualTo("holdfast:n:%7Bk=%5Ba,%20b%5D%7D");
		assertThat(this.keys.encode("n", Set.of(Set.of("y", "x"), Set.of("a"))))
			.isEqualTo("holdfast:n:%5B%5Ba%5D,%20%5Bx,%20y%5D%5D");
	}

	@Test
	void equalMapsRenderOneKeySortedByKey() {
		Map<String, Integer> linked = new LinkedHashMap<>();
		linked.put("plum", 3);
		linked.put("apple", 1);
		linked.put("kiwi", 2);
		String expected = "holdfast:n:%7Bapple=1,%20kiwi=2,%20plum=3%7D";
		assertThat(this.keys.encode("n", linked)).isEqualTo(expected);
		assertThat(this.keys.encode("n", Map.of("kiwi", 2, "plum", 3, "apple", 1))).isEqualTo(expected);
		// keys that render alike are ordered by their values, so the order of the map never shows
		Map<Object, String> alike = new LinkedHashMap<>();
		alike.put(1, "b");
		alike.put("1", "a");
		assertThat(this.keys.encode("n", alike)).isEqualTo("holdfast:n:%7B1=a,%201=b%7D");
	}

	@Test
	void listsAndArraysKeepTheirOrder() {
		assertThat(this.keys.encode("n", List.of("b", "a"))).isEqualTo("holdfast:n:%5Bb,%20a%5D");
		assertThat(this.keys.encode("n", new String[] { "b", "a" })).isEqualTo("holdfast:n:%7Bb,%20a%7D");
		assertThat(this.keys.encode("n", new long[] { 2, 1 })).isEqualTo("holdfast:n:%7B2,%201%7D");
	}

	@Test
	void arraysInsideCollectionsAndArraysAreRenderedByContent() {
		assertThat(this.keys.encode("n", List.of(new long[] { 1, 2 }))).isEqualTo("holdfast:n:%5B%7B1,%202%7D%5D");
		assertThat(this.keys.encode("n", new Object[] { new String[] { "a" } })).isEqualTo("holdfast:n:%7B%7Ba%7D%7D");
	}

	@Test
	void recordsAreRenderedComponentByComponent() {
		assertThat(this.keys.encode("n", new Sku("acme", 7))).isEqualTo("holdfast:n:Sku%5Btenant=acme,%20id=7%5D");
		String batch = this.keys.encode("n", new Batch("acme", new long[] { 1, 2 }, new HashSet<>(List.of("y", "x"))));
		assertThat(batch).isEqualTo("holdfast:n:Batch%5Btenant=acme,%20orderIds=%7B1,%202%7D,%20tags=%5Bx,%20y%5D%5D");
		assertThat(this.keys.encode("n", new Batch("acme", new long[] { 1, 2 }, new LinkedHashSet<>(List.of("x", "y")))))
			.as("equal content, another array and another set").isEqualTo(batch);
		assertThat(this.keys.encode("n", new Outer(new Sku("a", 1), null)))
			.isEqualTo("holdfast:n:Outer%5Bsku=Sku%5Btenant=a,%20id=1%5D,%20note=null%5D");
	}

	@Test
	void aRecordsOwnToStringIsItsKeyAsForAnyClass() {
		// a key written elsewhere as that text must meet it, and components it leaves out must
		// not split the lock
		assertThat(new Written("7", "alice")).hasToString("order-7");
		assertThat(this.keys.encode("n", new Written("7", "alice"))).isEqualTo("holdfast:n:order-7")
			.isEqualTo(this.keys.encode("n", new Written("7", "bob")))
			.isEqualTo(this.keys.encode("n", "order-7"));
		// its own toString() is judged as such: no component is inspected
		assertThat(IdentityStrings.findIdentityValue(new OwnText(new Customer()))).isNull();
	}

	@Test
	void aRecordWhoseOwnFinalToStringGivesTheGeneratedFormIsRenderedByItsComponents() {
		assertThat(this.keys.encode("n", new FinalText(new long[] { 1, 2 }))).isEqualTo("holdfast:n:FinalText%5Bids=%7B1,%202%7D%5D");
	}

	@Test
	void recordsHoldingIdentityStringsAreRejected() {
		assertThatIllegalArgumentException().isThrownBy(() -> this.keys.encode("orders", new Reserve(new Customer(), "x")))
			.withMessageContaining("'orders'")
			.withMessageContaining(Customer.class.getName())
			.withMessageContaining("identity string");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> this.keys.encode("orders", new Outer(null, new Reserve(new Customer(), "x"))));
	}

	@Test
	void keysThatRenderAsIdentityStringsAreRejected() {
		Runnable lambda = () -> {
		};
		assertThatIllegalArgumentException().isThrownBy(() -> this.keys.encode("orders", new Object()))
			.withMessageContaining("'orders'")
			.withMessageContaining("java.lang.Object")
			.withMessageContaining("identity string");
		assertThatIllegalArgumentException().isThrownBy(() -> this.keys.encode("orders", lambda));
		assertThatIllegalArgumentException().isThrownBy(() -> this.keys.encode("orders", List.of(new Object())));
		assertThatIllegalArgumentException()
			.isThrownBy(() -> this.keys.encode("orders", new Object[] { "a", new Object() }));
	}

	@Test
	void prefixWithBracesIsRejected() {
		assertThatIllegalArgumentException().isThrownBy(() -> new LockKeys("{app}:", 200)).withMessageContaining("{");
	}

	@Test
	void emptyNameIsRejected() {
		assertThatIllegalArgumentException().isThrownBy(() -> this.keys.encode("", null));
	}

	record Sku(String tenant, long id) {
	}

	record Batch(String tenant, long[] orderIds, Set<String> tags) {
	}

	record Outer(Sku sku, Object note) {
	}

	/** An entity whose toString() is Object's. */
	static class Customer {

	}

	record Reserve(Customer customer, String sku) {
	}

	record Written(String id, String requestedBy) {

		@Override
		public String toString() {
			return "order-" + this.id;
		}

	}

	record OwnText(Customer customer) {

		@Override
		public String toString() {
			return "customer";
		}

	}

	record FinalText(long[] ids) {

		@Override
		public final String toString() {
			return "FinalText[ids=" + this.ids + "]";
		}

	}

}
