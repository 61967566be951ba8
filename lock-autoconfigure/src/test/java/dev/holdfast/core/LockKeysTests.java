package dev.holdfast.core;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

class LockKeysTests {

	private final LockKeys keys = new LockKeys("holdfast:", 200);

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

}
