/**
 * The {@code redis} backend: locks on one Redis (standalone, Sentinel or Cluster) through the
 * application's spring-data-redis {@code RedisConnectionFactory}.
 */
@NullMarked
package dev.holdfast.redis;

import org.jspecify.annotations.NullMarked;
