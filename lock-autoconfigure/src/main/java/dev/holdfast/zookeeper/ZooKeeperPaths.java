package dev.holdfast.zookeeper;

import java.nio.charset.StandardCharsets;

/**
 * Node names for lock keys: every key maps to one node name, and different keys to different
 * names. Letters, digits and {@code - _ . : @} are kept; every other byte of the key's UTF-8 form,
 * {@code %} and {@code /} included, is written as {@code %XX}. The names {@code .} and
 * {@code ..}, which ZooKeeper refuses, have their dots escaped too.
 */
final class ZooKeeperPaths {

	private static final char[] HEX = "0123456789ABCDEF".toCharArray();

	/** The width of the sequence number ZooKeeper appends to a sequential node's name. */
	private static final int SEQUENCE_DIGITS = 10;

	private ZooKeeperPaths() {
	}

	static String encode(String key) {
		StringBuilder name = new StringBuilder(key.length() + 8);
		for (byte b : key.getBytes(StandardCharsets.UTF_8)) {
			int c = b & 0xFF;
			if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'
					|| c == '.' || c == ':' || c == '@') {
				name.append((char) c);
			}
			else {
				name.append('%').append(HEX[c >> 4]).append(HEX[c & 0xF]);
			}
		}
		String result = name.toString();
		return (result.isEmpty() || result.equals(".") || result.equals("..")) ? "%" + result.replace(".", "%2E")
				: result;
	}

	/** The last element of a path. */
	static String nodeName(String path) {
		return path.substring(path.lastIndexOf('/') + 1);
	}

	/** Whether a queue's node is a read hold's ({@code …-read-<seq>}) rather than a lock's ({@code …-lock-<seq>}). */
	static boolean reader(String name) {
		int at = name.length() - SEQUENCE_DIGITS - ZooKeeperReadHolds.READ_NODE.length();
		return at >= 0 && name.startsWith(ZooKeeperReadHolds.READ_NODE, at);
	}

	/** The sequence number of a sequential node, as its fixed-width digits (they sort as numbers). */
	static String sequence(String name) {
		return (name.length() > SEQUENCE_DIGITS) ? name.substring(name.length() - SEQUENCE_DIGITS) : name;
	}

}
