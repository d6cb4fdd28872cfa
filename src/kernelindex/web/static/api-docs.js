// Starts Swagger UI on /api/docs (an external file: the CSP allows no inline script).
(function () {
  "use strict";
  var node = document.getElementById("swagger-ui");
  if (!node || typeof window.SwaggerUIBundle !== "function") return;
  window.SwaggerUIBundle({
    url: node.getAttribute("data-openapi-url"),
    domNode: node,
    deepLinking: true,
    validatorUrl: null,  // no request to a third-party validator
    tryItOutEnabled: false
  });
})();
