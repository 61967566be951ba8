package dev.holdfast.jdbc;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

import org.springframework.util.Assert;
import org.springframework.util.DigestUtils;

/**
 * The keys of the lock table's rows. A lock's record is at its key, which has no brace; every
 * other row's key has one, so none meets a lock's: a job's tick record (<code>&lt;key&gt;{tick}</code>,
 * or <code>{tick}&lt;MD5&gt;</code> when too long), a reader's row
 * (<code>{r}&lt;hash of the key&gt;&lt;hash of the owner&gt;</code>) and a waiting writer's stamp
 * (<code>{w}&lt;hash of the key&gt;</code>), each hash the first 32 hexadecimal digits of a SHA-256
 * (RWL-36).
 */
final class JdbcKeys {

	/** The length of the {@code lock_key} column in the shipped schemas. */
	private static final int MAX_KEY_LENGTH = 255;

	/** Follows a job's lock key in the key of its tick record; lock keys have no brace. */
	static final String TICK_SUFFIX = "{tick}";

	private static final String READER_PREFIX = "{r}";

	private static final String STAMP_PREFIX = "{w}";

	/** Hexadecimal digits of each hash in a reader's or a stamp's key. */
	private static final int HASH_DIGITS = 32;

	private JdbcKeys() {
	}

	/**
	 * The key of the tick record of the job whose lock is at {@code key}. A key too long for the
	 * column gives way to its MD5 digest: job keys are job names that developers write, not input
	 * that an attacker chooses, so a checksum suffices.
	 */
	static String tickRecordKey(String key) {
		String record = key + TICK_SUFFIX;
		return (record.length() <= MAX_KEY_LENGTH) ? record
				: TICK_SUFFIX + DigestUtils.md5DigestAsHex(key.getBytes(StandardCharsets.UTF_8));
	}

	static void checkLockKey(String key) {
		Assert.hasLength(key, "'key' must not be empty");
		if (key.indexOf('{') >= 0) {
			throw new IllegalArgumentException("Lock key '" + key + "' contains '{': the JDBC backend keeps the tick"
					+ " records of scheduled jobs and the rows of readers at keys with braces, so lock keys must not"
					+ " have them (keys built by Holdfast never do)");
		}
	}

	/** What the keys of {@code key}'s reader rows begin with. */
	static String readerPrefix(String key) {
		return READER_PREFIX + hash(key);
	}

	static String readerKey(String key, String owner) {
		return readerPrefix(key) + hash(owner);
	}

	static String stampKey(String key) {
		return STAMP_PREFIX + hash(key);
	}

	/** The first {@value #HASH_DIGITS} hexadecimal digits of the SHA-256 of {@code text}. */
	private static String hash(String text) {
		try {
			byte[] digest = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
			return HexFormat.of().formatHex(digest, 0, HASH_DIGITS / 2);
		}
		catch (NoSuchAlgorithmException ex) {
			throw new IllegalStateException(ex);
		}
	}

}
