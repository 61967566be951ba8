package dev.holdfast.core;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;

import org.jspecify.annotations.Nullable;

import dev.holdfast.LeaseInfo;

/**
 * Builds backend keys {@code <prefix><name>} and {@code <prefix><name>:<key>}, the key part rendered by
 * {@link IdentityStrings#render}: both percent-encoded (every character outside {@code [A-Za-z0-9._~/@+=,;!$&'()*-]}
 * becomes {@code %XX} of its UTF-8 bytes, so {@code :} and {@code #} never appear), a key over the limit shortened to
 * {@code <prefix><name, truncated>#<SHA-256 of the full key>}; a permit slot's key ({@link #encodeSlot}) appends
 * {@code #<index>} before that limit. Why no two pairs meet: KEY-1 and SEM-2 in docs/DESIGN.md.
 */
public final class LockKeys {

	private static final char[] HEX = "0123456789ABCDEF".toCharArray();

	private static final int HASH_LENGTH = 1 + 43;

	private final String prefix;

	private final int maxLength;

	public LockKeys(String prefix, int maxLength) {
		String other = prefix.replaceAll("[A-Za-z0-9._~/@+=,;!$&'()*:-]", "");
		if (!other.isEmpty()) {
			throw new IllegalArgumentException("Key prefix '" + prefix + "' contains '" + other.charAt(0)
					+ "': use letters, digits, ':' and ._~/@+=,;!$&'()*-");
		}
		if (prefix.length() + HASH_LENGTH + 8 > maxLength) {
			throw new IllegalArgumentException("Key prefix '" + prefix + "' is too long for keys of at most " + maxLength);
		}
		this.prefix = prefix;
		this.maxLength = maxLength;
	}

	/**
	 * The backend key of a lock.
	 * @param name the lock name, not empty
	 * @param key the key value, or {@code null} for one lock per name
	 * @throws IllegalArgumentException if the key renders as an identity string (see {@link IdentityStrings})
	 */
	public String encode(String name, @Nullable Object key) {
		return encode(name, key, "");
	}

	/** The backend key of permit slot {@code index} of the semaphore (name, key): its lock key, then {@code #<index>}. */
	public String encodeSlot(String name, @Nullable Object key, int index) {
		return encode(name, key, "#" + index);
	}

	private String encode(String name, @Nullable Object key, String slot) {
		if (name.isEmpty()) {
			throw new IllegalArgumentException("Lock name must not be empty");
		}
		if ((key == null || key instanceof String) && slot.isEmpty() && isPlain(name)) {
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
			String text;
			try {
				text = IdentityStrings.render(key);
			}
			catch (IdentityStrings.IdentityValue found) {
				Class<?> type = found.value.getClass();
				throw new IllegalArgumentException("The key of lock '" + name + "' is (or holds) a " + type.getName()
						+ ", whose toString() is Object's identity string (class name and hash code): the key would "
						+ "differ per call and per JVM, and the lock would exclude nothing. Pass a value that "
						+ "identifies it, such as its id"
						+ (type.isSynthetic() ? "" : ", or override toString() in " + type.getSimpleName()));
			}
			escape(text, out.append(':'));
		}
		out.append(slot);
		if (out.length() <= this.maxLength) {
			return out.toString();
		}
		String hash = Base64.getUrlEncoder().withoutPadding().encodeToString(sha256(out.toString()));
		int keep = Math.min(nameEnd, this.maxLength - HASH_LENGTH);
		// never cut an escape sequence in half: the visible part is for operators only
		while (keep > this.prefix.length() && keep < nameEnd && (out.charAt(keep - 1) == '%'
				|| (keep >= 2 && out.charAt(keep - 2) == '%'))) {
			keep--;
		}
		return out.substring(0, keep) + "#" + hash;
	}

	/**
	 * The index of the permit slot whose key {@code key} is ({@code <semaphore key>#<index>}, made by
	 * {@link #encodeSlot}, not shortened); {@code null} for a lock's key.
	 */
	public static @Nullable Integer slotOf(String key) {
		int index = key.lastIndexOf('#');
		return (index > 0 && key.length() - index <= 3 && key.substring(index + 1).matches("-?[0-9]+"))
				? Integer.valueOf(key.substring(index + 1)) : null;
	}

	/**
	 * The {@code mode} tag of a lease of {@code key} (OBS-14): {@code read} for a read hold,
	 * {@code permit} for a permit slot's key, else {@code exclusive}.
	 */
	public static String mode(String key, boolean read) {
		return read ? LeaseInfo.READ : (slotOf(key) != null) ? LeaseInfo.PERMIT : LeaseInfo.EXCLUSIVE;
	}

	/**
	 * {@code key} with its key part, which comes from method arguments and may hold user data, replaced by
	 * {@code ******} as Boot's sanitizer shows a hidden value: {@code <prefix><name>:******}, or
	 * {@code <prefix><name>#******} for a shortened key. A permit slot's index stays visible ({@code <prefix><name>#0},
	 * {@code <prefix><name>:******#2}). A key without a key part is returned as it is.
	 * @param key a backend key made by {@link #encode} or {@link #encodeSlot}
	 * @param prefix the prefix it was made with
	 */
	public static String mask(String key, String prefix) {
		if (slotOf(key) != null) {
			int slot = key.lastIndexOf('#');
			return mask(key.substring(0, slot), prefix) + key.substring(slot);
		}
		int start = key.startsWith(prefix) ? prefix.length() : 0;
		for (int i = start; i < key.length(); i++) {
			char c = key.charAt(i);
			if (c == ':' || c == '#') {
				return key.substring(0, i + 1) + "******";
			}
		}
		return key;
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

	static byte[] sha256(String value) {
		try {
			return MessageDigest.getInstance("SHA-256").digest(value.getBytes(StandardCharsets.UTF_8));
		}
		catch (NoSuchAlgorithmException ex) {
			throw new IllegalStateException("Every Java platform has SHA-256", ex);
		}
	}

}
