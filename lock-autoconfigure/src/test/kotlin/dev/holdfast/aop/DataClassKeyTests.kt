package dev.holdfast.aop

import dev.holdfast.DistributedLock
import dev.holdfast.LockConfigurationException
import dev.holdfast.LockContext
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration
import dev.holdfast.core.IdentityStrings
import org.assertj.core.api.Assertions.assertThat
import org.assertj.core.api.Assertions.assertThatIllegalArgumentException
import org.junit.jupiter.api.Test
import org.springframework.boot.autoconfigure.AutoConfigurations
import org.springframework.boot.test.context.runner.ApplicationContextRunner

/**
 * Kotlin data classes as lock keys, compiled by kotlinc: their generated `toString()` renders
 * their properties, as a record's renders its components, so an entity among them (a class that
 * keeps `Object.toString()`) made a key of its identity string, different per call and per JVM.
 * Before, a data class passed as any class declaring `toString()` does, and its lock excluded
 * nothing.
 */
class DataClassKeyTests {

	private val runner = ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration::class.java))
		.withPropertyValues("holdfast.backend=memory")

	@Test
	fun aDataClassHoldingAnEntityIsAnIdentityKey() {
		val shipping = Shipping(Parcel(), "Main Street")
		assertThat(IdentityStrings.findIdentityValue(shipping)).isSameAs(shipping.parcel)
		assertThat(IdentityStrings.findDeclaredIdentity(Shipping::class.java))
			.isEqualTo(IdentityStrings.DeclaredIdentity("parcel", Parcel::class.java))
		assertThat(IdentityStrings.findIdentityValue(Route("a", listOf(Shipping(Parcel(), "b")))))
			.`as`("inside a list in a data class").isInstanceOf(Parcel::class.java)
		assertThat(IdentityStrings.findIdentityValue(RecordShipping(Parcel(), "b"))).`as`("@JvmRecord")
			.isInstanceOf(Parcel::class.java)
		assertThat(IdentityStrings.findIdentityValue(Batch(longArrayOf(1, 2), Parcel()))).`as`("with an array")
			.isInstanceOf(Parcel::class.java)
		assertThat(IdentityStrings.findIdentityValue(WithId(OrderId(7), Parcel()))).`as`("with a value-class id")
			.isInstanceOf(Parcel::class.java)
		assertThat(IdentityStrings.findDeclaredIdentity(WithId::class.java))
			.isEqualTo(IdentityStrings.DeclaredIdentity("parcel", Parcel::class.java))
	}

	@Test
	fun dataClassesOfValuesAndWithTheirOwnToStringPass() {
		assertThat(IdentityStrings.findIdentityValue(OrderRef(7, "eu"))).isNull()
		assertThat(IdentityStrings.findIdentityValue(Generic(OrderId(7), "eu"))).`as`("a value class in a generic one")
			.isNull()
		assertThat(IdentityStrings.findIdentityValue(Generic(Parcel(), "eu"))).`as`("a generic entity")
			.isInstanceOf(Parcel::class.java)
		assertThat(IdentityStrings.findDeclaredIdentity(OrderRef::class.java)).isNull()
		assertThat(IdentityStrings.findIdentityValue(Labelled(Parcel(), "p-1")))
			.`as`("its own toString() is what renders").isNull()
		val plain = Plain(Parcel())
		assertThat(IdentityStrings.findIdentityValue(plain)).`as`("not a data class: judged whole").isSameAs(plain)
	}

	@Test
	fun aKeyParameterThatIsADataClassHoldingAnEntityFailsTheContext() {
		runner.withBean(ShippingService::class.java).run { context ->
			assertThat(context).hasFailed()
			assertThat(context.startupFailure).rootCause()
				.isInstanceOf(LockConfigurationException::class.java)
				.hasMessageContaining(ShippingService::class.java.name + ".ship")
				.hasMessageContaining("parcel")
		}
	}

	@Test
	fun aDataClassKeyRendersAsItsToStringAndRefusesAnEntityFoundAtTheCall() {
		runner.withBean(OrderService::class.java).run { context ->
			assertThat(context).hasNotFailed()
			val orders = context.getBean(OrderService::class.java)
			assertThat(orders.ship(OrderRef(7, "eu"))).isEqualTo("holdfast:ship:OrderRef(id=7,%20region=eu)")
			assertThat(orders.any(Generic(OrderId(7), "eu"))).`as`("the key is the data class's own text")
				.isEqualTo("holdfast:any:Generic(value=OrderId(value=7),%20region=eu)")
			assertThatIllegalArgumentException().isThrownBy { orders.any(Shipping(Parcel(), "b")) }
				.withMessageContaining(Parcel::class.java.name)
		}
	}

	class Parcel

	class Plain(val parcel: Parcel)

	data class Shipping(val parcel: Parcel, val address: String)

	data class Route(val name: String, val stops: List<Shipping>)

	@JvmRecord
	data class RecordShipping(val parcel: Parcel, val address: String)

	@JvmInline
	value class OrderId(val value: Long)

	data class WithId(val id: OrderId, val parcel: Parcel)

	data class Generic<T>(val value: T, val region: String)

	@Suppress("ArrayInDataClass")
	data class Batch(val ids: LongArray, val parcel: Parcel)

	data class OrderRef(val id: Long, val region: String)

	data class Labelled(val parcel: Parcel, val label: String) {
		override fun toString() = label
	}

	open class ShippingService {

		@DistributedLock(name = "ship", key = "#shipping")
		open fun ship(shipping: Shipping) {
		}

	}

	open class OrderService {

		@DistributedLock(name = "ship", key = "#order")
		open fun ship(order: OrderRef): String = LockContext.requireLease().key()

		@DistributedLock(name = "any", key = "#value")
		open fun any(value: Any): String = LockContext.requireLease().key()

	}

}
