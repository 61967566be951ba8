package dev.holdfast.faults;

import java.time.Duration;
import java.util.List;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;

/**
 * The fenced resource of a read-write fault run: one counter in a Redis that no fault touches,
 * the token of the write that produced its value, and two fences: the highest token of any
 * accepted operation, and the highest of a writer's. A writer's read or write is refused if its
 * token is below the first (a later writer's or reader's token reached the resource: the fencing
 * guard); a reader's read if its token is below the second (a later write landed; readers of one
 * group need not share a token, ZooKeeper's do not, so readers never refuse each other). An
 * accepted operation raises the fences to its token. Every operation, accepted or refused, is
 * appended to a history in the resource's own order: {@code r token result} (a reader's read),
 * {@code p token result} (a writer's read), {@code w token value result} (a write), result
 * {@code ok} or {@code rejected}.
 */
final class ReadWriteResource implements AutoCloseable {

	static final String HISTORY = "rw:history";

	// KEYS value, writer, fence, writers' fence, history; ARGV kind (r or p), token.
	private static final String READ = """
			local token = tonumber(ARGV[2])
			local fence = tonumber(redis.call('GET', KEYS[ARGV[1] == 'r' and 4 or 3]) or '0')
			if token < fence then
			  redis.call('RPUSH', KEYS[5], ARGV[1] .. ' ' .. ARGV[2] .. ' rejected')
			  return {'rejected', '-1', '-1'}
			end
			if token > tonumber(redis.call('GET', KEYS[3]) or '0') then redis.call('SET', KEYS[3], ARGV[2]) end
			if ARGV[1] == 'p' then redis.call('SET', KEYS[4], ARGV[2]) end
			redis.call('RPUSH', KEYS[5], ARGV[1] .. ' ' .. ARGV[2] .. ' ok')
			return {'ok', redis.call('GET', KEYS[1]) or '0', redis.call('GET', KEYS[2]) or '0'}
			""";

	// KEYS value, writer, fence, writers' fence, history; ARGV token, new value.
	private static final String WRITE = """
			local fence = tonumber(redis.call('GET', KEYS[3]) or '0')
			if tonumber(ARGV[1]) < fence then
			  redis.call('RPUSH', KEYS[5], 'w ' .. ARGV[1] .. ' ' .. ARGV[2] .. ' rejected')
			  return 'rejected'
			end
			redis.call('SET', KEYS[3], ARGV[1])
			redis.call('SET', KEYS[4], ARGV[1])
			redis.call('SET', KEYS[2], ARGV[1])
			redis.call('SET', KEYS[1], ARGV[2])
			redis.call('RPUSH', KEYS[5], 'w ' .. ARGV[1] .. ' ' .. ARGV[2] .. ' ok')
			return 'ok'
			""";

	private static final String[] KEYS = { "rw:value", "rw:writer", "rw:fence", "rw:writers-fence", HISTORY };

	private final RedisClient client;

	private final StatefulRedisConnection<String, String> connection;

	private final RedisCommands<String, String> commands;

	private ReadWriteResource(RedisClient client) {
		this.client = client;
		this.connection = client.connect();
		this.commands = this.connection.sync();
	}

	static ReadWriteResource connect(String uri) {
		RedisURI redisUri = RedisURI.create(uri);
		redisUri.setTimeout(Duration.ofSeconds(5));
		return new ReadWriteResource(RedisClient.create(redisUri));
	}

	/** A reader's read ({@code reader}) or a writer's ({@code !reader}) with {@code token}. */
	Read read(long token, boolean reader) {
		List<Object> reply = this.commands.eval(READ, ScriptOutputType.MULTI, KEYS, reader ? "r" : "p",
				Long.toString(token));
		return new Read((String) reply.get(0), Long.parseLong((String) reply.get(1)),
				Long.parseLong((String) reply.get(2)));
	}

	/** Writes {@code value} with {@code token}: {@code ok} or {@code rejected}. */
	String write(long token, long value) {
		return this.commands.eval(WRITE, ScriptOutputType.VALUE, KEYS, Long.toString(token), Long.toString(value));
	}

	/** Every operation so far, in the resource's order. */
	List<String> history() {
		return this.commands.lrange(HISTORY, 0, -1);
	}

	@Override
	public void close() {
		this.connection.close();
		this.client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
	}

	/** The outcome of a read: {@code ok} with the value and its writer's token, or {@code rejected}. */
	record Read(String result, long value, long writerToken) {

		boolean accepted() {
			return "ok".equals(this.result);
		}

	}

}
