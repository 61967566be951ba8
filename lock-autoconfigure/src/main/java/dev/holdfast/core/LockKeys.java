package dev.holdfast.core;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.jspecify.annotations.Nullable;

import org.springframework.util.ObjectUtils;

/**
 * Builds backend keys {@code <prefix><name>} and {@code <prefix><name>:<key>}.
 * <p>
 * Name and key are percent-encoded: every character outside {@code [A-Za-z0-9._~/@+=,;!$&'()*-]}
 * becomes {@code %XX} of its UTF-8 bytes. Percent-encoding with {@code %} itself encoded is
 * injective and never outputs {@code :}, so no key value can make two different (name, key)
 * pairs meet on one backend key; nor does it output braces, whitespace or control characters
 * (Redis hash tags and SQL columns stay well defined). A key longer than the limit is replaced by
 * {@code <prefix><name, truncated>#<SHA-256 of the full key>}; {@code #} never appears in an
 * encoded key, so a shortened key cannot meet an unshortened one.
 * <p>
 * The key part is the key value's text, rendered so that equal values give equal text in every
 * JVM: a {@link Set} lists its elements sorted by their text ({@code [a, b]}) whatever its
 * iteration order, a {@link Map} its entries sorted by key text, then value text
 * ({@code {a=1, b=2}}); lists and other collections ({@code [b, a]}) and arrays
 * ({@code {b, a}}) keep their order; a record with the compiler's {@code toString()} renders its
 * components, read through its accessors, in that form ({@code Order[id=7, lines={1, 2}]}), while
 * a record with a {@code toString()} of its own renders that; all of them recursively, so arrays inside them render by
 * content too. Any other value renders its {@code toString()}. The text is not meant to be
 * injective: values of different types may render alike ({@code 42} and {@code "42"}, a set and
 * the sorted list of its elements) and then share a lock, which costs concurrency, never
 * exclusion.
 */
public final class LockKeys {

	/** What replaces the key part of a masked key, as Boot's sanitizer shows a hidden value. */
	public static final String MASK = "******";

	private static final char[] HEX = "0123456789ABCDEF".toCharArray();

	private static final int HASH_LENGTH = 1 + 43;

	private final String prefix;

	private final int maxLength;

	public LockKeys(String prefix, int maxLength) {
		for (int i = 0; i < prefix.length(); i++) {
			char c = prefix.charAt(i);
			if (!isPlain(c) && c != ':') {
				throw new IllegalArgumentException("Key prefix '" + prefix + "' contains '" + c
						+ "': use letters, digits, ':' and ._~/@+=,;!$&'()*-");
			}
		}
		if (prefix.length() + HASH_LENGTH + 8 > maxLength) {
			throw new IllegalArgumentException("Key prefix '" + prefix + "' is too long for keys of at most "
					+ maxLength + " characters");
		}
		this.prefix = prefix;
		this.maxLength = maxLength;
	}

	/**
	 * The backend key of a lock.
	 * @param name the lock name, not empty
	 * @param key the key value, or {@code null} for one lock per name; sets and maps are
	 * rendered in sorted order, arrays and records element by element (see the class Javadoc)
	 * @throws IllegalArgumentException if the key renders as an identity string (see
	 * {@link IdentityStrings})
	 */
	public String encode(String name, @Nullable Object key) {
		if (name.isEmpty()) {
			throw new IllegalArgumentException("Lock name must not be empty");
		}
		if ((key == null || key instanceof String) && isPlain(name)) {
			// The usual case, in one string and no builder: nothing to escape, nothing to shorten.
			String value = (String) key;
			if (value == null && this.prefix.length() + name.length() <= this.maxLength) {
				return this.prefix.isEmpty() ? name : this.prefix + name;
			}
			if (value != null && isPlain(value)
					&& this.prefix.length() + name.length() + 1 + value.length() <= this.maxLength) {
				return this.prefix + name + ':' + value;
			}
		}
		StringBuilder out = new StringBuilder(this.prefix.length() + name.length() + 16).append(this.prefix);
		escape(name, out);
		int nameEnd = out.length();
		if (key != null) {
			Object identity = IdentityStrings.findIdentityValue(key);
			if (identity != null) {
				throw new IllegalArgumentException("The key of lock '" + name + "' is (or holds) a "
						+ identity.getClass().getName() + ", whose toString() is Object's identity string (class name "
						+ "and hash code): the key would differ per call and per JVM, and the lock would exclude "
						+ "nothing. Pass a value that identifies it, such as its id"
						+ (identity.getClass().isSynthetic() ? ""
								: ", or override toString() in " + identity.getClass().getSimpleName()));
			}
			out.append(':');
			escape(render(key), out);
		}
		if (out.length() <= this.maxLength) {
			return out.toString();
		}
		String hash = sha256(out.toString());
		int keep = Math.min(nameEnd, this.maxLength - HASH_LENGTH);
		// never cut an escape sequence in half: the visible part is for operators only
		while (keep > this.prefix.length() && keep < nameEnd && (out.charAt(keep - 1) == '%'
				|| (keep >= 2 && out.charAt(keep - 2) == '%'))) {
			keep--;
		}
		return out.substring(0, keep) + "#" + hash;
	}

	/**
	 * {@code key} with its key part, which comes from method arguments and may hold user data,
	 * replaced by {@value #MASK}: {@code <prefix><name>:******}, or {@code <prefix><name>#******}
	 * for a shortened key. A key without a key part is returned as it is.
	 * @param key a backend key made by {@link #encode}
	 * @param prefix the prefix it was made with
	 */
	public static String mask(String key, String prefix) {
		int start = key.startsWith(prefix) ? prefix.length() : 0;
		for (int i = start; i < key.length(); i++) {
			char c = key.charAt(i);
			if (c == ':' || c == '#') {
				return key.substring(0, i + 1) + MASK;
			}
		}
		return key;
	}

	/** The prefix every key starts with. */
	public String prefix() {
		return this.prefix;
	}

	/** The text of a key value, the same for equal values in every JVM (see the class Javadoc). */
	static String render(@Nullable Object value) {
		if (value == null || value instanceof CharSequence || value instanceof Number || value instanceof Enum<?>) {
			return String.valueOf(value);
		}
		StringBuilder out = new StringBuilder();
		render(value, out);
		return out.toString();
	}

	private static void render(@Nullable Object value, StringBuilder out) {
		if (value == null || value instanceof CharSequence || value instanceof Number || value instanceof Enum<?>) {
			out.append(value);
		}
		else if (value instanceof Object[] array) {
			out.append('{');
			for (int i = 0; i < array.length; i++) {
				render(array[i], out.append((i > 0) ? ", " : ""));
			}
			out.append('}');
		}
		else if (value.getClass().isArray()) {
			out.append(ObjectUtils.nullSafeToString(value));
		}
		else if (value instanceof Set<?> set) {
			List<String> elements = new ArrayList<>(set.size());
			for (Object element : set) {
				elements.add(render(element));
			}
			elements.sort(null);
			out.append('[').append(String.join(", ", elements)).append(']');
		}
		else if (value instanceof Collection<?> collection) {
			out.append('[');
			boolean first = true;
			for (Object element : collection) {
				render(element, out.append(first ? "" : ", "));
				first = false;
			}
			out.append(']');
		}
		else if (value instanceof Map<?, ?> map) {
			// by key text, then value text: keys that render alike (1 and "1") must not leave the order to the map
			List<String[]> entries = new ArrayList<>(map.size());
			for (Map.Entry<?, ?> entry : map.entrySet()) {
				entries.add(new String[] { render(entry.getKey()), render(entry.getValue()) });
			}
			entries.sort((a, b) -> (a[0].equals(b[0])) ? a[1].compareTo(b[1]) : a[0].compareTo(b[0]));
			out.append('{');
			for (int i = 0; i < entries.size(); i++) {
				out.append((i > 0) ? ", " : "").append(entries.get(i)[0]).append('=').append(entries.get(i)[1]);
			}
			out.append('}');
		}
		else {
			@Nullable Object[] components = IdentityStrings.generatedComponents(value);
			if (components == null) {
				out.append(value);
				return;
			}
			// the generated toString()'s form (a record's, a Kotlin data class's), with each
			// component rendered by these rules
			IdentityStrings.ComponentForm form = IdentityStrings.componentForm(value.getClass());
			out.append(value.getClass().getSimpleName()).append(form.open());
			for (int i = 0; i < components.length; i++) {
				render(components[i], out.append((i > 0) ? ", " : "").append(form.names()[i]).append('='));
			}
			out.append(form.close());
		}
	}

	private static void escape(String value, StringBuilder out) {
		for (int i = 0; i < value.length(); i++) {
			char c = value.charAt(i);
			if (isPlain(c)) {
				out.append(c);
			}
			else {
				int codePoint = value.codePointAt(i);
				if (Character.charCount(codePoint) == 2) {
					i++;
				}
				for (byte b : new String(Character.toChars(codePoint)).getBytes(StandardCharsets.UTF_8)) {
					out.append('%').append(HEX[(b >> 4) & 0xF]).append(HEX[b & 0xF]);
				}
			}
		}
	}

	private static boolean isPlain(String value) {
		for (int i = 0; i < value.length(); i++) {
			if (!isPlain(value.charAt(i))) {
				return false;
			}
		}
		return true;
	}

	private static boolean isPlain(char c) {
		return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
				|| "._~/@+=,;!$&'()*-".indexOf(c) >= 0;
	}

	private static String sha256(String value) {
		try {
			byte[] digest = MessageDigest.getInstance("SHA-256").digest(value.getBytes(StandardCharsets.UTF_8));
			return Base64.getUrlEncoder().withoutPadding().encodeToString(digest);
		}
		catch (NoSuchAlgorithmException ex) {
			throw new IllegalStateException(ex);
		}
	}

}
