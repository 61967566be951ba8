package dev.holdfast.redis;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ConcurrentHashMap;

import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.protocol.CommandArgs;
import io.netty.buffer.ByteBuf;

/**
 * {@code EVALSHA}'s arguments (SHA, number of keys, keys, arguments) written straight into
 * Lettuce's output buffer as RESP bulk strings. Lettuce's own {@link CommandArgs} keeps an object
 * per argument and renders the SHA, the number of keys and every length of ten or more through
 * strings: several hundred bytes of garbage per locked call, which this class does not make.
 * The bytes on the wire are the same. Loaded only when Lettuce is on the classpath.
 */
final class ScriptArguments extends CommandArgs<byte[], byte[]> {

	private static final byte[] CRLF = { '\r', '\n' };

	/** {@code $40\r\n<sha>\r\n} per script: a handful of scripts per application. */
	private static final ConcurrentHashMap<String, byte[]> SHA_BULKS = new ConcurrentHashMap<>();

	private final String sha;

	private final byte[] shaBulk;

	private final byte[][] keys;

	private final byte[][] args;

	ScriptArguments(String sha, byte[][] keys, byte[][] args) {
		super(ByteArrayCodec.INSTANCE);
		this.sha = sha;
		this.shaBulk = SHA_BULKS.computeIfAbsent(sha, ScriptArguments::bulk);
		this.keys = keys;
		this.args = args;
	}

	@Override
	public int count() {
		return 2 + this.keys.length + this.args.length;
	}

	@Override
	public void encode(ByteBuf buffer) {
		buffer.writeBytes(this.shaBulk);
		buffer.writeByte('$');
		writeDecimal(buffer, decimalLength(this.keys.length));
		buffer.writeBytes(CRLF);
		writeDecimal(buffer, this.keys.length);
		buffer.writeBytes(CRLF);
		for (byte[] key : this.keys) {
			writeBulk(buffer, key);
		}
		for (byte[] arg : this.args) {
			writeBulk(buffer, arg);
		}
	}

	@Override
	public ByteBuffer getFirstEncodedKey() {
		return (this.keys.length > 0) ? ByteBuffer.wrap(this.keys[0]) : null;
	}

	@Override
	public String toCommandString() {
		StringBuilder out = new StringBuilder(this.sha).append(' ').append(this.keys.length);
		for (byte[] key : this.keys) {
			out.append(" key<").append(new String(key, StandardCharsets.UTF_8)).append('>');
		}
		for (byte[] arg : this.args) {
			out.append(" value<").append(new String(arg, StandardCharsets.UTF_8)).append('>');
		}
		return out.toString();
	}

	@Override
	public String toString() {
		return getClass().getSimpleName() + " [" + toCommandString() + "]";
	}

	private static void writeBulk(ByteBuf buffer, byte[] value) {
		buffer.writeByte('$');
		writeDecimal(buffer, value.length);
		buffer.writeBytes(CRLF);
		buffer.writeBytes(value);
		buffer.writeBytes(CRLF);
	}

	/** {@code value} (not negative) in decimal ASCII digits, without a string. */
	private static void writeDecimal(ByteBuf buffer, int value) {
		int divisor = 1;
		while (value / divisor >= 10) {
			divisor *= 10;
		}
		while (divisor > 0) {
			buffer.writeByte('0' + (value / divisor) % 10);
			divisor /= 10;
		}
	}

	private static int decimalLength(int value) {
		int length = 1;
		while (value >= 10) {
			value /= 10;
			length++;
		}
		return length;
	}

	private static byte[] bulk(String sha) {
		byte[] digits = sha.getBytes(StandardCharsets.US_ASCII);
		byte[] length = Integer.toString(digits.length).getBytes(StandardCharsets.US_ASCII);
		byte[] bulk = new byte[1 + length.length + 2 + digits.length + 2];
		bulk[0] = '$';
		System.arraycopy(length, 0, bulk, 1, length.length);
		System.arraycopy(CRLF, 0, bulk, 1 + length.length, 2);
		System.arraycopy(digits, 0, bulk, 3 + length.length, digits.length);
		System.arraycopy(CRLF, 0, bulk, bulk.length - 2, 2);
		return bulk;
	}

}
