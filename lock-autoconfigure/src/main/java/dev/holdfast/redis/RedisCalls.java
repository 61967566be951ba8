package dev.holdfast.redis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeoutException;

import org.jspecify.annotations.Nullable;

import org.springframework.core.NestedExceptionUtils;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.ReturnType;
import org.springframework.data.redis.core.script.RedisScript;
import org.springframework.util.Assert;

import dev.holdfast.LockBackendException;

/**
 * How the Redis backend talks to Redis: keys and arguments checked and encoded, scripts sent by
 * SHA (and again in full after {@code NOSCRIPT}), failures turned into
 * {@link LockBackendException}s that say what failed.
 */
final class RedisCalls {

	private RedisCalls() {
	}

	static <T> T evalSha(RedisConnection connection, RedisScript<?> script, ReturnType type, byte[][] keys,
			byte[][] args) {
		byte[][] keysAndArgs = new byte[keys.length + args.length][];
		System.arraycopy(keys, 0, keysAndArgs, 0, keys.length);
		System.arraycopy(args, 0, keysAndArgs, keys.length, args.length);
		return evalSha(connection, script, type, keys.length, keysAndArgs);
	}


	static <T> T evalSha(RedisConnection connection, RedisScript<?> script, ReturnType type, int numKeys,
			byte[]... keysAndArgs) {
		try {
			return connection.scriptingCommands().evalSha(script.getSha1(), type, numKeys, keysAndArgs);
		}
		catch (RuntimeException ex) {
			if (!isNoScript(ex)) {
				throw ex;
			}
			// Redis lost its script cache (restart, SCRIPT FLUSH): EVAL caches the script again.
			return connection.scriptingCommands().eval(bytes(script.getScriptAsString()), type, numKeys, keysAndArgs);
		}
	}


	static boolean isNoScript(@Nullable Object candidate) {
		return hasMessage(candidate, "NOSCRIPT");
	}

	/** Whether the candidate is an exception whose message, or a cause's, contains {@code text}. */
	static boolean hasMessage(@Nullable Object candidate, String text) {
		Throwable current = (candidate instanceof Throwable throwable) ? throwable : null;
		while (current != null) {
			String message = current.getMessage();
			if (message != null && message.contains(text)) {
				return true;
			}
			current = (current.getCause() != current) ? current.getCause() : null;
		}
		return false;
	}

	static LockBackendException failure(String operation, String key, Throwable ex) {
		return failure(operation + " of lock '" + key + "'", ex);
	}


	static LockBackendException failure(String what, Throwable ex) {
		if (ex instanceof CompletionException && ex.getCause() != null) {
			ex = ex.getCause();
		}
		if (ex instanceof LockBackendException backendException) {
			return backendException;
		}
		if (causedByInterruption(ex)) {
			// The client library caught the interruption and wrapped it: keep the caller's flag.
			Thread.currentThread().interrupt();
		}
		Throwable cause = NestedExceptionUtils.getMostSpecificCause(ex);
		String detail = (cause instanceof TimeoutException) ? "no answer within the command timeout"
				: cause.getMessage();
		return new LockBackendException(
				"Redis " + what + " failed: " + cause.getClass().getSimpleName() + ": " + detail, ex);
	}


	private static boolean causedByInterruption(Throwable ex) {
		for (Throwable current = ex; current != null; current = (current.getCause() != current) ? current.getCause()
				: null) {
			if (current instanceof InterruptedException) {
				return true;
			}
		}
		return false;
	}

	static byte[] lockKey(String key) {
		return hashTagged(key, "}");
	}


	static byte[] fenceKey(String key) {
		return hashTagged(key, "}:fence");
	}

	/** The sorted set of a lock's recorded waiters, in the lock's slot. */
	static byte[] waitersKey(String key) {
		return hashTagged(key, "}:waiters");
	}

	/** The sorted set of a read-held lock's reader entries ({@link RedisSharedLocks}), in the lock's slot. */
	static byte[] readersKey(String key) {
		return hashTagged(key, "}:readers");
	}

	/** The sorted set of a lock's waiting readers' records, in the lock's slot. */
	static byte[] readWaitKey(String key) {
		return hashTagged(key, "}:readwait");
	}

	/**
	 * {@code "{" + key + suffix} in UTF-8; an ASCII key (the usual case) is copied straight into
	 * the one array, without the concatenated string and its encoding.
	 */
	private static byte[] hashTagged(String key, String suffix) {
		Assert.hasLength(key, "Lock key must not be empty");
		int length = key.length();
		boolean ascii = true;
		for (int i = 0; i < length; i++) {
			char c = key.charAt(i);
			if (c == '{' || c == '}') {
				throw new IllegalArgumentException("Lock key '" + key
						+ "' must not contain '{' or '}': the Redis backend wraps keys in a hash tag");
			}
			ascii &= c < 0x80;
		}
		if (!ascii) {
			return bytes("{" + key + suffix);
		}
		byte[] tagged = new byte[1 + length + suffix.length()];
		tagged[0] = '{';
		for (int i = 0; i < length; i++) {
			tagged[1 + i] = (byte) key.charAt(i);
		}
		for (int i = 0; i < suffix.length(); i++) {
			tagged[1 + length + i] = (byte) suffix.charAt(i);
		}
		return tagged;
	}


	static byte[] ownerBytes(String owner) {
		return bytes(checkOwner(owner));
	}


	static String checkOwner(String owner) {
		Assert.hasLength(owner, "Lock owner must not be empty");
		if (owner.charAt(0) == RedisLockBackend.RESERVED || owner.charAt(0) == '~') {
			throw new IllegalArgumentException("Lock owner '" + owner + "' must not start with '" + RedisLockBackend.RESERVED
					+ "': the Redis backend marks a lock reserved for a waiter ('*') or read-held ('~') with it");
		}
		return owner;
	}


	static long ttlMillis(Duration ttl) {
		long millis = ttl.toMillis();
		if (millis < 1) {
			throw new IllegalArgumentException("Lock ttl must be at least 1ms, was " + ttl);
		}
		return millis;
	}


	static byte[] bytes(String value) {
		return value.getBytes(StandardCharsets.UTF_8);
	}

}
