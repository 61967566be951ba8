package dev.holdfast.faults;

import java.time.Duration;
import java.util.List;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;

/**
 * The shared resource that lock holders update: counters in a Redis that no fault touches. Every
 * read and write carries the caller's fencing token, and the resource remembers the highest token
 * it has seen per counter. A <em>guarded</em> operation with a lower token is rejected (the fencing
 * guard of the design: {@code ... WHERE fence < ?}); an unguarded one is carried out and reported
 * as {@code stale}, so that the checker can count stale writes that a resource without the guard
 * accepts.
 */
final class Resource extends SharedResource {

	/** Counter written without the guard. */
	static final String PLAIN = "plain";

	/** Counter written through the fencing guard. */
	static final String FENCED = "fenced";

	// KEYS[1] value, KEYS[2] highest token seen; ARGV[1] token, ARGV[2] guarded (1/0).
	private static final String READ = """
			local seen = tonumber(redis.call('GET', KEYS[2]) or '0')
			local token = tonumber(ARGV[1])
			if token < seen then
			  if ARGV[2] == '1' then return {'rejected', '-1'} end
			  return {'stale', redis.call('GET', KEYS[1]) or '0'}
			end
			redis.call('SET', KEYS[2], ARGV[1])
			return {'ok', redis.call('GET', KEYS[1]) or '0'}
			""";

	// KEYS[1] value, KEYS[2] highest token seen; ARGV[1] token, ARGV[2] guarded, ARGV[3] new value.
	private static final String WRITE = """
			local seen = tonumber(redis.call('GET', KEYS[2]) or '0')
			local token = tonumber(ARGV[1])
			if token < seen then
			  if ARGV[2] == '1' then return 'rejected' end
			  redis.call('SET', KEYS[1], ARGV[3])
			  return 'stale'
			end
			redis.call('SET', KEYS[2], ARGV[1])
			redis.call('SET', KEYS[1], ARGV[3])
			return 'ok'
			""";

	private final RedisClient client;

	private final StatefulRedisConnection<String, String> connection;

	private final RedisCommands<String, String> commands;

	private Resource(RedisClient client) {
		this.client = client;
		this.connection = client.connect();
		this.commands = this.connection.sync();
	}

	static Resource connect(String uri) {
		RedisURI redisUri = RedisURI.create(uri);
		redisUri.setTimeout(Duration.ofSeconds(5));
		return new Resource(RedisClient.create(redisUri));
	}

	Read read(String counter, long token, boolean guarded) {
		List<Object> reply = this.commands.eval(READ, ScriptOutputType.MULTI, keys(counter),
				Long.toString(token), guarded ? "1" : "0");
		return new Read((String) reply.get(0), Long.parseLong((String) reply.get(1)));
	}

	String write(String counter, long token, long value, boolean guarded) {
		return this.commands.eval(WRITE, ScriptOutputType.VALUE, keys(counter), Long.toString(token),
				guarded ? "1" : "0", Long.toString(value));
	}

	long value(String counter) {
		String value = this.commands.get(counter + ":value");
		return (value != null) ? Long.parseLong(value) : 0;
	}

	private static String[] keys(String counter) {
		return new String[] { counter + ":value", counter + ":fence" };
	}

	@Override
	public void close() {
		this.connection.close();
		this.client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
	}

	/** The outcome of a read: {@code ok}, {@code stale} (unguarded, lower token) or {@code rejected}. */
	record Read(String result, long value) {

		boolean accepted() {
			return !"rejected".equals(this.result);
		}

	}

}
