package dev.holdfast.redlock;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.DecoderException;
import org.jspecify.annotations.Nullable;

/**
 * The Redis protocol as a {@link NodeChannel} speaks it: commands written as arrays of bulk
 * strings, replies (RESP2 or RESP3) read into numbers, strings, booleans, lists and errors.
 */
final class Resp {

	/** What {@link #parse} returns when the buffer does not hold the whole reply yet. */
	static final Object INCOMPLETE = new Object();

	/** What {@link #parse} returns for an out-of-band message (RESP3 push). */
	static final Object PUSH = new Object();

	private Resp() {
	}

	/** Appends a command: its name, then arguments as bulk strings (byte arrays as they are). */
	static void write(ByteBuf buffer, byte[] command, Object[] args) {
		buffer.writeByte('*');
		writeNumber(buffer, args.length + 1);
		writeBulk(buffer, command);
		for (Object arg : args) {
			if (arg instanceof byte[] bytes) {
				writeBulk(buffer, bytes);
			}
			else if (arg instanceof Long || arg instanceof Integer) {
				String text = arg.toString();
				buffer.writeByte('$');
				writeNumber(buffer, text.length());
				buffer.writeCharSequence(text, StandardCharsets.US_ASCII);
				buffer.writeShort(('\r' << 8) | '\n');
			}
			else {
				writeBulk(buffer, String.valueOf(arg).getBytes(StandardCharsets.UTF_8));
			}
		}
	}

	private static void writeBulk(ByteBuf buffer, byte[] bytes) {
		buffer.writeByte('$');
		writeNumber(buffer, bytes.length);
		buffer.writeBytes(bytes);
		buffer.writeShort(('\r' << 8) | '\n');
	}

	// A non-negative number and CRLF.
	private static void writeNumber(ByteBuf buffer, int number) {
		if (number < 10) {
			buffer.writeByte('0' + number);
		}
		else {
			buffer.writeCharSequence(Integer.toString(number), StandardCharsets.US_ASCII);
		}
		buffer.writeShort(('\r' << 8) | '\n');
	}

	// One reply, RESP2 or RESP3: a Long, String, Boolean, List, null, an ErrorReply, PUSH (an
	// out-of-band message) or INCOMPLETE when the buffer does not hold all of it yet.
	static @Nullable Object parse(ByteBuf in) {
		if (!in.isReadable()) {
			return INCOMPLETE;
		}
		int lineStart = in.readerIndex() + 1;
		int lf = in.indexOf(lineStart, in.writerIndex(), (byte) '\n');
		if (lf < 0) {
			return INCOMPLETE;
		}
		byte type = in.getByte(in.readerIndex());
		int lineEnd = lf - 1; // the CR
		in.readerIndex(lf + 1);
		switch (type) {
			case ':':
				return parseLong(in, lineStart, lineEnd);
			case '+', '(', ',':
				return in.toString(lineStart, lineEnd - lineStart, StandardCharsets.UTF_8);
			case '-':
				return new ErrorReply(in.toString(lineStart, lineEnd - lineStart, StandardCharsets.UTF_8));
			case '_':
				return null;
			case '#':
				return in.getByte(lineStart) == 't';
			case '$', '=', '!': {
				long length = parseLong(in, lineStart, lineEnd);
				if (length < 0) {
					return null;
				}
				if (in.readableBytes() < length + 2) {
					return INCOMPLETE;
				}
				String text = in.toString(in.readerIndex(), (int) length, StandardCharsets.UTF_8);
				in.skipBytes((int) length + 2);
				return (type == '!') ? new ErrorReply(text) : text;
			}
			case '*', '~', '>', '%', '|': {
				long count = parseLong(in, lineStart, lineEnd);
				if (count < 0) {
					return null;
				}
				long elements = (type == '%' || type == '|') ? count * 2 : count;
				List<@Nullable Object> list = new ArrayList<>((int) Math.min(elements, 1024));
				for (long i = 0; i < elements; i++) {
					Object element = parse(in);
					if (element == INCOMPLETE) {
						return INCOMPLETE;
					}
					list.add(element);
				}
				if (type == '>') {
					return PUSH;
				}
				// An attribute describes the reply that follows it.
				return (type == '|') ? parse(in) : list;
			}
			default:
				throw new DecoderException("Unexpected RESP type '" + (char) type + "'");
		}
	}

	private static long parseLong(ByteBuf in, int from, int to) {
		boolean negative = in.getByte(from) == '-';
		long value = 0;
		for (int i = negative ? from + 1 : from; i < to; i++) {
			byte digit = in.getByte(i);
			if (digit < '0' || digit > '9') {
				throw new DecoderException("Malformed number in a RESP reply");
			}
			value = value * 10 + (digit - '0');
		}
		return negative ? -value : value;
	}

	/** An error reply of the node. */
	record ErrorReply(String message) {
	}

}
