package dev.holdfast.redis;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.protocol.Command;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The arguments of the backend's {@code EVALSHA} calls go on the wire exactly as Lettuce's own
 * {@link CommandArgs} would write them.
 */
class ScriptArgumentsTests {

	private static final String SHA = "0123456789abcdef0123456789abcdef01234567";

	@Test
	void encodesAsLettuceDoesForEveryLengthOfKeysAndArguments() {
		int[] lengths = { 0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 12345 };
		for (int length : lengths) {
			byte[][] keys = { bytes('k', length), bytes('f', length + 7) };
			byte[][] args = { bytes('o', length), "30000".getBytes(StandardCharsets.US_ASCII), bytes('c', 3) };
			assertSameBytes(keys, args);
		}
		assertSameBytes(new byte[0][], new byte[0][]);
		byte[][] twelveKeys = new byte[12][];
		Arrays.fill(twelveKeys, bytes('x', 10));
		assertSameBytes(twelveKeys, new byte[][] { "Zürich".getBytes(StandardCharsets.UTF_8) });
	}

	@Test
	void reportsTheFirstKeyAndCountsTheArgumentsAsLettuceDoes() {
		byte[][] keys = { bytes('a', 3), bytes('b', 4) };
		byte[][] args = { bytes('c', 5) };
		ScriptArguments arguments = new ScriptArguments(SHA, keys, args);
		assertThat(arguments.count()).isEqualTo(lettuce(keys, args).count());
		assertThat(arguments.getFirstEncodedKey()).isEqualTo(lettuce(keys, args).getFirstEncodedKey());
		assertThat(arguments.toCommandString()).contains(SHA).contains("aaa").contains("bbbb").contains("ccccc");
	}

	private static void assertSameBytes(byte[][] keys, byte[][] args) {
		assertThat(encoded(new ScriptArguments(SHA, keys, args))).isEqualTo(encoded(lettuce(keys, args)));
	}

	/** What {@code RedisCommandBuilder.evalsha} builds. */
	private static CommandArgs<byte[], byte[]> lettuce(byte[][] keys, byte[][] args) {
		return new CommandArgs<>(ByteArrayCodec.INSTANCE).add(SHA).add(keys.length).addKeys(keys).addValues(args);
	}

	private static byte[] encoded(CommandArgs<byte[], byte[]> args) {
		ByteBuf buffer = Unpooled.buffer();
		try {
			new Command<>(CommandType.EVALSHA, null, args).encode(buffer);
			byte[] bytes = new byte[buffer.readableBytes()];
			buffer.readBytes(bytes);
			return bytes;
		}
		finally {
			buffer.release();
		}
	}

	private static byte[] bytes(char c, int length) {
		byte[] bytes = new byte[length];
		Arrays.fill(bytes, (byte) c);
		return bytes;
	}

}
